#pragma once
// The running server a configuration describes: its handlers, built from
// the config structs, in a router; its limits; its access log.

#include "config/config.hpp"
#include "fastcgi/upstream.hpp"
#include "fastcgi/upstream_pools.hpp"
#include "http/server.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft {

struct BuiltServer {
    // The upstreams' pools, shared by the fastcgi handlers that name them
    // (and kept across reloads: fastcgi/upstream_pools.hpp).
    std::vector<std::shared_ptr<fastcgi::Upstream>> upstreams;
    http::Server server;
    // Shared with the sessions still connected after a reload freed this.
    std::shared_ptr<http::AccessLog> access_log;
    // Every handler in the router, in the configuration's order (the
    // router sorts each site's by prefix): what `weft -t` describes.
    std::vector<const http::Handler*> handlers;
};

enum class Build : std::uint8_t {
    serving,  // everything a run needs
    checking, // `weft -t`: the handlers, without opening their roots; no access log
};

// nullptr with a one-line reason when a handler cannot start (a root that
// does not open, a log that cannot be written).
// Pools come from `pools` when given (a reload keeps them), else are new.
std::unique_ptr<BuiltServer> build_server(const config::Config& config, std::string& error,
                                          Build purpose = Build::serving,
                                          fastcgi::UpstreamPools* pools = nullptr);

// One line per listener and handler, on stdout: what this server serves.
void describe(const BuiltServer& built, const std::vector<Address>& listeners);

} // namespace weft
