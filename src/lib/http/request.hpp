#pragma once
// A parsed request head: views into the connection's buffer (zero-copy), valid
// until the connection moves on to the next request.

#include "util/ascii.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft::http {

// Methods the server knows by name; any other token is `other` (501 unless a
// handler knows it).
enum class Method : std::uint8_t {
    other,
    get,
    head,
    post,
    put,
    delete_,
    options,
    patch,
    trace,
    connect
};

struct Header {
    std::string_view name;  // as sent; compare case-insensitively
    std::string_view value; // surrounding whitespace removed
};

// More header fields than this is 431, like a head over the size limit.
inline constexpr std::size_t kMaxHeaders = 100;

struct Request {
    // Leaves headers[] uninitialised: zeroing 3 KiB for every request cost
    // more than parsing one.
    Request() {}

    Method method = Method::other;
    // The head as the client sent it, from the request line through the
    // empty line: what every view below was parsed from. Empty (a null
    // data()) for a request the server made from another (an error page's).
    std::string_view head;
    std::string_view method_name;
    std::string_view target; // the request-target as sent
    std::string_view path;   // its path, still percent-encoded; "*" for OPTIONS *
    std::string_view query;  // after the first '?', without it; empty if none
    std::string_view host;   // the Host field, or the absolute-form target's authority
    std::uint8_t minor = 1;  // HTTP/1.minor: 0 or 1
    bool keep_alive = true;  // after this request, by the version's rules and Connection
    bool expect_continue = false;
    bool chunked = false; // Transfer-Encoding: chunked
    // It came behind a request answered before it on this connection (its
    // bytes were buffered by then: pipelined). Set by the connection.
    bool pipelined = false;
    // `path` is its own normal form (http/path.hpp): normalize_path() would
    // hand it back as it is. Set by the parser for origin-form paths it
    // could tell so while scanning them; false says nothing.
    bool path_normal = false;
    std::uint64_t content_length = 0; // when not chunked
    // The user Basic authentication let in (http/basic_auth.hpp), or empty:
    // set by the connection, not the parser.
    std::string_view remote_user;
    std::size_t header_count = 0;
    union {
        Header headers[kMaxHeaders]; // [0, header_count) are the fields
    };

    bool has_body() const { return chunked || content_length != 0; }
    // The first field named `name` (ASCII case-insensitive), or an empty view
    // with a null data() when there is none.
    std::string_view header(std::string_view name) const;
};

} // namespace weft::http
