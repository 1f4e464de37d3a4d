#pragma once
// A request rate per client, as `limit_rate` writes it (nginx's limit_req
// with its zone's rate):
//   100r/s   10r/m   5r/s burst 20   5r/s burst 20 nodelay   off
// A leaky bucket in milli-requests, as nginx's: each request adds 1000 to a
// client's excess, which drains at the rate; a request that would take the
// excess past burst * 1000 is refused. Within the burst a request waits
// until its excess has drained (nginx's default), or, with `nodelay`, goes at
// once. `burst=20` is read too, as nginx writes it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft {

struct RateLimit {
    static constexpr std::uint64_t kMaxRate = 1'000'000; // requests per second or minute
    static constexpr std::uint32_t kMaxBurst = 1'000'000;

    // Milli-requests drained per minute (100r/s: 6'000'000; 10r/m: 10'000);
    // 0: `off`, no limit.
    std::uint64_t per_minute = 0;
    std::uint32_t burst = 0; // requests beyond the rate
    bool nodelay = false;
    bool per_second = true; // as written, for to_string()

    bool off() const { return per_minute == 0; }

    // nullopt with a one-line reason in `error`.
    static std::optional<RateLimit> parse(std::string_view text, std::string& error);
    // As parse() reads it back: "100r/s burst 50 nodelay", "off".
    std::string to_string() const;

    friend bool operator==(const RateLimit&, const RateLimit&) = default;
};

} // namespace weft
