// libFuzzer target for forwarding headers (http/forwarded.hpp). The input's
// first byte picks the header, the rest is its fields, one a line. Whatever
// the bytes: the chain keeps at most kMaxNodes hops; each named hop's
// address reads back from its text to itself; the client picked is the
// first untrusted hop past trusted ones (the last trusted one when an
// unnamed hop or the end comes first); X-Forwarded-For fields added one by
// one give the hops their comma-joined value gives.

#include "http/forwarded.hpp"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace weft;
using namespace weft::http;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const auto header = static_cast<ForwardingHeader>(data[0] % 3);
    std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    std::vector<std::string_view> fields;
    while (!rest.empty()) {
        const std::size_t newline = rest.find('\n');
        fields.push_back(rest.substr(0, newline));
        if (newline == std::string_view::npos) break;
        rest.remove_prefix(newline + 1);
    }
    static const AccessRules proxies = [] {
        AccessRules rules;
        std::string error;
        rules.add(true, "10.0.0.0/8 ::1 2001:db8::/32 unix:", error);
        return rules;
    }();

    ForwardedChain chain;
    for (std::string_view field : fields) chain.add(header, field);
    check(chain.size() <= ForwardedChain::kMaxNodes);
    for (std::size_t i = 0; i < chain.size(); ++i) {
        const ForwardedNode& node = chain.nearest(i);
        if (!node.named) continue;
        char text[46];
        address_text(node.address, text);
        const std::optional<IpAddress> again = IpAddress::parse(text);
        check(again && *again == node.address);
    }

    // The first hop that is untrusted or unnamed: the client if named, else
    // the one before it, else the peer.
    const ForwardedNode client = pick_client(chain, proxies);
    std::size_t stop = 0;
    while (stop < chain.size() && chain.nearest(stop).named &&
           trusts(proxies, chain.nearest(stop).address))
        ++stop;
    const ForwardedNode* expected = nullptr;
    if (stop < chain.size() && chain.nearest(stop).named)
        expected = &chain.nearest(stop);
    else if (stop > 0)
        expected = &chain.nearest(stop - 1);
    check(client.named == (expected != nullptr));
    if (expected) check(client.address == expected->address && client.port == expected->port);

    if (header == ForwardingHeader::x_forwarded_for) {
        std::string joined;
        for (std::string_view field : fields) (joined += field) += ',';
        ForwardedChain one;
        one.add(header, joined);
        check(one.size() == chain.size());
        for (std::size_t i = 0; i < chain.size(); ++i)
            check(one.nearest(i).named == chain.nearest(i).named &&
                  one.nearest(i).address == chain.nearest(i).address);
    }
    return 0;
}
