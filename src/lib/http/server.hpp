#pragma once
// What every connection of a server shares, read-only once the loops run:
// the router with its handlers, the limits and timeouts, the access log.

#include "http/access_log.hpp"
#include "http/parser.hpp"
#include "http/router.hpp"

#include <cstdint>

namespace weft::http {

struct ServerOptions {
    std::uint32_t request_timeout_ms = 10'000;    // to receive a whole head (slowloris)
    std::uint32_t keep_alive_timeout_ms = 15'000; // idle between requests
    std::uint32_t body_timeout_ms = 60'000;       // between two reads of a body
    std::uint32_t send_timeout_ms = 60'000;       // between two writes of a response
    std::uint64_t max_request_body = 16u << 20;   // larger: 413
    ParserLimits parser;
};

struct Server {
    Router router;
    ServerOptions options;
    AccessLog* access_log = nullptr; // none: off
};

} // namespace weft::http
