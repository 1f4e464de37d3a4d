#include "config/values.hpp"

#include "util/ascii.hpp"

#include <array>
#include <charconv>
#include <limits>

namespace weft::config {

namespace {

// The leading digits of `text` as a number, and the rest; nullopt if there
// are no digits. `too_big` says the digits do not fit in 64 bits.
std::optional<std::uint64_t> leading_number(std::string_view text, std::string_view& rest,
                                            bool& too_big) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (end == text.data()) return std::nullopt;
    too_big = ec == std::errc::result_out_of_range;
    rest = text.substr(static_cast<std::size_t>(end - text.data()));
    return value;
}

// value * unit, or nullopt if it overflows `limit`.
std::optional<std::uint64_t> scaled(std::uint64_t value, std::uint64_t unit, std::uint64_t limit) {
    if (value > limit / unit) return std::nullopt;
    return value * unit;
}

struct Unit {
    std::string_view suffix;
    std::uint64_t scale;
};

} // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text, std::string& error) {
    static constexpr std::array<Unit, 6> kUnits = {
        {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}, {"", 1000}}};
    constexpr auto kLimit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    std::string_view unit;
    bool too_big = false;
    if (const auto number = leading_number(text, unit, too_big)) {
        for (const Unit& u : kUnits) {
            if (unit != u.suffix) continue;
            const auto ms = scaled(*number, u.scale, kLimit);
            if (ms && !too_big) return std::chrono::milliseconds(static_cast<std::int64_t>(*ms));
            error = "duration '" + std::string(text) + "' is too long";
            return std::nullopt;
        }
    }
    error = "expected a duration such as 250ms, 15s, 2m, 1h or 7d, not '" + std::string(text) + "'";
    return std::nullopt;
}

std::optional<std::uint64_t> parse_size(std::string_view text, std::string& error) {
    static constexpr std::array<Unit, 7> kUnits = {{{"", 1},
                                                    {"K", 1ull << 10},
                                                    {"k", 1ull << 10},
                                                    {"M", 1ull << 20},
                                                    {"m", 1ull << 20},
                                                    {"G", 1ull << 30},
                                                    {"g", 1ull << 30}}};
    constexpr auto kLimit = std::numeric_limits<std::uint64_t>::max();
    std::string_view unit;
    bool too_big = false;
    if (const auto number = leading_number(text, unit, too_big)) {
        for (const Unit& u : kUnits) {
            if (unit != u.suffix) continue;
            const auto bytes = scaled(*number, u.scale, kLimit);
            if (bytes && !too_big) return bytes;
            error = "size '" + std::string(text) + "' is too large";
            return std::nullopt;
        }
    }
    error = "expected a size such as 512, 16K, 1M or 1G, not '" + std::string(text) + "'";
    return std::nullopt;
}

std::optional<bool> parse_bool(std::string_view text, std::string& error) {
    if (text == "on" || text == "true" || text == "yes") return true;
    if (text == "off" || text == "false" || text == "no") return false;
    error = "expected on or off (or true/false, yes/no), not '" + std::string(text) + "'";
    return std::nullopt;
}

std::vector<std::string_view> split_list(std::string_view text) {
    std::vector<std::string_view> items;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && ascii::is_whitespace(text[i])) ++i;
        const std::size_t start = i;
        while (i < text.size() && !ascii::is_whitespace(text[i])) ++i;
        if (i > start) items.push_back(text.substr(start, i - start));
    }
    return items;
}

} // namespace weft::config
