#pragma once
// Which format a status request asks for: `?format=` wins, then Accept
// (RFC 9110 §12.5.1, q-values), then the handler's default.

#include <cstdint>
#include <optional>
#include <string_view>

namespace weft::handlers::status {

enum class Format : std::uint8_t { text, json, prometheus, html };

// "text", "json", "prometheus", "html" (any case); nullopt for another.
std::optional<Format> format_named(std::string_view name);
std::string_view format_name(Format format);

// The value of `format=` among the query's `&`-separated parameters, as
// sent (not percent-decoded: the names need none); nullopt when absent.
std::optional<std::string_view> query_format(std::string_view query);

// What Accept prefers among the formats: the one with the highest q of the
// most specific range that names it (text/html, application/json,
// text/plain with version=0.0.4 for Prometheus's exposition, text/plain),
// ties to the earlier in that order; a choice only wildcards (*/*, text/*)
// make, or none at all, leaves it to `fallback`.
Format accepted_format(std::string_view accept, Format fallback);

// The format for a request: `?format=` (nullopt when it names none we
// have: the request is refused), else Accept's choice, else `fallback`.
std::optional<Format> choose_format(std::string_view query, std::string_view accept,
                                    Format fallback);

} // namespace weft::handlers::status
