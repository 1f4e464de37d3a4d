#pragma once
// HTTP dates (RFC 9110 §5.6.7): IMF-fixdate out, all three forms in, and the
// per-loop cache of the current one for the Date header.

#include <cstdint>
#include <ctime>
#include <optional>
#include <string_view>

namespace weft::http {

inline constexpr std::size_t kHttpDateLength = 29; // "Sun, 06 Nov 1994 08:49:37 GMT"

// Writes `t` as an IMF-fixdate into out[0..29).
void format_http_date(std::time_t t, char* out);

// IMF-fixdate, RFC 850 or asctime form; nullopt when it is none of them.
std::optional<std::time_t> parse_http_date(std::string_view text);

// The current date, formatted at most once a second on this thread.
std::string_view current_http_date();

// The current date plus `seconds` (an Expires field's), formatted at most
// once a second on this thread for the same `seconds` as the last call.
std::string_view http_date_after(std::int64_t seconds);

} // namespace weft::http
