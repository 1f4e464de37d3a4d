#pragma once
// What a failed step with the backend means for the client: a status and
// the error log's line, or no answer at all when the client is gone. One
// table (backend_failure.cpp) for every step.

#include "fastcgi/upstream.hpp"

#include <cstdint>

namespace weft::handlers {

enum class BackendStep : std::uint8_t {
    connect, // taking a connection from the upstream's pool
    send,    // writing the request
    read,    // reading the response
};

struct BackendFailure {
    int status;       // 0: the client left (or the server stops): nobody to answer
    const char* what; // the error log's line
    int error;        // an errno to add to it, or 0
};

// For a connection the pool did not give.
BackendFailure backend_failure(fastcgi::AcquireError error);
// For a send or a read that returned `result`: -errno, or 0 (the backend
// closed its side).
BackendFailure backend_failure(BackendStep step, long result);

} // namespace weft::handlers
