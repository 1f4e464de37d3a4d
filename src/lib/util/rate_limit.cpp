#include "util/rate_limit.hpp"

#include "util/ascii.hpp"

#include <charconv>

namespace weft {

namespace {

// The next word of `text` (split at spaces and tabs), or "" at its end.
std::string_view next_word(std::string_view& text) {
    text = ascii::trim_whitespace(text);
    std::size_t end = 0;
    while (end < text.size() && !ascii::is_whitespace(text[end])) ++end;
    const std::string_view word = text.substr(0, end);
    text.remove_prefix(end);
    return word;
}

// All of `text` as a number from `low` to `high`.
std::optional<std::uint64_t> whole_number(std::string_view text, std::uint64_t low,
                                          std::uint64_t high) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value < low ||
        value > high)
        return std::nullopt;
    return value;
}

} // namespace

std::optional<RateLimit> RateLimit::parse(std::string_view text, std::string& error) {
    const auto fail = [&](std::string why) -> std::optional<RateLimit> {
        error = std::move(why);
        return std::nullopt;
    };
    std::string_view rest = text;
    const std::string_view rate = next_word(rest);
    RateLimit limit;
    if (rate == "off") {
        if (!next_word(rest).empty()) return fail("'off' takes nothing after it");
        return limit;
    }
    const bool per_second = rate.ends_with("r/s");
    if (!per_second && !rate.ends_with("r/m"))
        return fail("expected a rate such as 100r/s or 30r/m, or off, not '" + std::string(rate) +
                    "'");
    const std::optional<std::uint64_t> count =
        whole_number(rate.substr(0, rate.size() - 3), 1, kMaxRate);
    if (!count)
        return fail("expected a rate from 1 to " + std::to_string(kMaxRate) +
                    " requests a second or a minute, not '" + std::string(rate) + "'");
    limit.per_second = per_second;
    limit.per_minute = *count * 1000 * (per_second ? 60 : 1);
    bool burst_seen = false;
    for (std::string_view word = next_word(rest); !word.empty(); word = next_word(rest)) {
        if (word == "nodelay" && !limit.nodelay) {
            limit.nodelay = true;
            continue;
        }
        if ((word == "burst" || word.starts_with("burst=")) && !burst_seen) {
            const std::string_view value = word == "burst" ? next_word(rest) : word.substr(6);
            const std::optional<std::uint64_t> burst = whole_number(value, 0, kMaxBurst);
            if (!burst)
                return fail("expected a burst from 0 to " + std::to_string(kMaxBurst) +
                            " requests, not '" + std::string(value) + "'");
            limit.burst = static_cast<std::uint32_t>(*burst);
            burst_seen = true;
            continue;
        }
        if (word.starts_with("delay"))
            return fail("weft delays every request within the burst, or none ('nodelay'): "
                        "nginx's two-stage 'delay=' has no counterpart");
        return fail("expected 'burst N' or 'nodelay' (once each) after the rate, not '" +
                    std::string(word) + "'");
    }
    return limit;
}

std::string RateLimit::to_string() const {
    if (off()) return "off";
    std::string text =
        std::to_string(per_minute / 1000 / (per_second ? 60 : 1)) + (per_second ? "r/s" : "r/m");
    if (burst) text += " burst " + std::to_string(burst);
    if (nodelay) text += " nodelay";
    return text;
}

} // namespace weft
