#include "http/status.hpp"

#include <array>
#include <cstdio>
#include <string>

namespace weft::http {

namespace {

struct Entry {
    int status;
    std::string_view text;
};

// RFC 9110 §15, plus 429 and 431 (RFC 6585).
constexpr Entry kStatuses[] = {
    {100, "Continue"},
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {203, "Non-Authoritative Information"},
    {204, "No Content"},
    {205, "Reset Content"},
    {206, "Partial Content"},
    {300, "Multiple Choices"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {303, "See Other"},
    {304, "Not Modified"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {402, "Payment Required"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {407, "Proxy Authentication Required"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {412, "Precondition Failed"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {416, "Range Not Satisfiable"},
    {417, "Expectation Failed"},
    {421, "Misdirected Request"},
    {422, "Unprocessable Content"},
    {426, "Upgrade Required"},
    {428, "Precondition Required"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};

// Status lines indexed by code - 100, built once.
struct Lines {
    std::array<std::string, 500> by_code;
    Lines() {
        for (const Entry& e : kStatuses)
            by_code[e.status - 100] =
                "HTTP/1.1 " + std::to_string(e.status) + " " + std::string(e.text) + "\r\n";
    }
};

const Lines& lines() {
    static const Lines built;
    return built;
}

} // namespace

std::string_view status_text(int status) {
    for (const Entry& e : kStatuses)
        if (e.status == status) return e.text;
    return "Unknown";
}

std::string_view status_line(int status, char* scratch) {
    if (status >= 100 && status < 600) {
        const std::string& line = lines().by_code[status - 100];
        if (!line.empty()) return line;
    }
    if (status < 100 || status > 999) status = 500;
    const int n =
        std::snprintf(scratch, 40, "HTTP/1.1 %d %s\r\n", status, status_text(status).data());
    return {scratch, static_cast<std::size_t>(n)};
}

} // namespace weft::http
