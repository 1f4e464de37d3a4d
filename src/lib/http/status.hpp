#pragma once
// Status codes: their reason phrases and ready-made status lines.

#include <string_view>

namespace weft::http {

// "Not Found" for 404; "Unknown" for a code outside the table.
std::string_view status_text(int status);

// "HTTP/1.1 404 Not Found\r\n", precomputed for every code in the table; one
// built into `scratch` (at least 40 bytes) for any other code in 100..999.
std::string_view status_line(int status, char* scratch);

// Whether a response with this status has no body (1xx, 204, 304).
constexpr bool status_has_no_body(int status) {
    return status < 200 || status == 204 || status == 304;
}

} // namespace weft::http
