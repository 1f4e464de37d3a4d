// libFuzzer target for `limit_rate` values (util/rate_limit.hpp). Whatever
// parses must hold: a rate within bounds (or off), a burst within bounds,
// and the value read back from its text is the same.

#include "util/rate_limit.hpp"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

using weft::RateLimit;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::string error;
    const std::optional<RateLimit> limit = RateLimit::parse(text, error);
    if (!limit) {
        check(!error.empty());
        return 0;
    }
    check(limit->per_minute <= RateLimit::kMaxRate * 60'000);
    check(limit->burst <= RateLimit::kMaxBurst);
    if (limit->off()) check(limit->burst == 0 && !limit->nodelay);
    std::string why;
    const std::optional<RateLimit> again = RateLimit::parse(limit->to_string(), why);
    check(again && again->per_minute == limit->per_minute && again->burst == limit->burst &&
          again->nodelay == limit->nodelay);
    return 0;
}
