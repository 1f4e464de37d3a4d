#pragma once
// What every connection of a server shares, read-only once the loops run:
// the router with its handlers, the limits and timeouts, the access log.

#include "http/access_log.hpp"
#include "http/forwarded.hpp"
#include "http/parser.hpp"
#include "http/router.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace weft::http {

struct ServerOptions {
    std::uint32_t request_timeout_ms = 10'000;    // to receive a whole head (slowloris)
    std::uint32_t keep_alive_timeout_ms = 15'000; // idle between requests
    std::uint32_t body_timeout_ms = 60'000;       // between two reads of a body
    std::uint32_t send_timeout_ms = 60'000;       // between two writes of a response
    std::uint64_t max_request_body = 16u << 20;   // larger: 413
    ParserLimits parser;
    RealIp real_ip; // real_ip_from, real_ip_header
};

// A server's life on the loops, when a reload can replace it (weft's
// Serving): on each loop, the connections running with it and whether a
// newer server replaced it there; and how many loops still run connections
// with it once it was replaced.
struct ServerUse {
    struct alignas(64) OnLoop {
        std::uint32_t connections = 0; // its loop's thread only
        bool replaced = false;
    };
    explicit ServerUse(std::size_t loops) : on_loop(loops), loops_left(loops) {}
    std::vector<OnLoop> on_loop;
    std::atomic<std::size_t> loops_left;
};

struct Server {
    Router router;
    ServerOptions options;
    // None: off. Shared: a session that outlives its request (a
    // SessionLog) keeps it after a reload frees the server.
    std::shared_ptr<AccessLog> access_log;
    // None: never replaced. A connection with a next request whose loop
    // says `replaced` gives it to the new server.
    std::unique_ptr<ServerUse> use;
};

} // namespace weft::http
