// libFuzzer target for address blocks and allow/deny lists (util/cidr.hpp).
// The input is a list as `allow_from` takes it. Whatever parses must hold:
// each block contains its own base address, reads back from its text to the
// same block, and a list allows or denies its own rules' addresses as the
// first rule that matches them says.

#include "util/cidr.hpp"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

using weft::AccessRule;
using weft::AccessRules;
using weft::Cidr;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::string error;
    AccessRules rules;
    const bool allow = size > 0 && (data[0] & 1);
    if (!rules.add(allow, text, error)) {
        check(!error.empty());
        return 0;
    }
    for (const AccessRule& rule : rules.rules()) {
        check(rule.allow == allow);
        if (rule.scope != AccessRule::Scope::block) continue;
        const Cidr& block = rule.block;
        check(block.contains(block.base()));
        const std::string back = block.to_string();
        std::string why;
        const std::optional<Cidr> again = Cidr::parse(back, why);
        check(again && *again == block);
        // The first rule that matches an address decides; none: allowed.
        bool expected = true;
        for (const AccessRule& first : rules.rules())
            if (first.matches(block.base())) {
                expected = first.allow;
                break;
            }
        check(rules.allows(block.base()) == expected);
    }
    return 0;
}
