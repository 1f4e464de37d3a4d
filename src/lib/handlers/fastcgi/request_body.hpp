#pragma once
// A request body read whole before a backend is taken, into a Spool: a slow
// upload must not hold a PHP worker, a chunked one needs its exact
// CONTENT_LENGTH, and a retry on a fresh connection can send it again.
// (Its memory is on the heap, taken with the first byte: none for a GET.)

#include "handlers/fastcgi/spool.hpp"
#include "http/exchange.hpp"

#include <cstddef>

namespace weft::handlers {

// Kept in memory up to this, then in a temp file.
constexpr std::size_t kBodyMemory = 8 * 1024;

// Whether the body is read whole first: a chunked one always, any other
// unless the handler streams them (request_buffering = off).
inline bool reads_body_first(const http::Request& request, bool request_buffering) {
    return request.chunked || (request_buffering && request.has_body());
}

// Reads the whole request body into `body`: 0, or the read's error (-EIO:
// the spool's).
int read_body_whole(http::Exchange& exchange, Spool& body);

} // namespace weft::handlers
