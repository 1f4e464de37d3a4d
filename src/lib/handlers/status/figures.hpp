#pragma once
// The figures a status response shows, read at once from every loop's
// counters (loop/loop_stats.hpp) and every upstream pool: the reader takes
// each counter with a relaxed load, so it waits for no loop, and each
// figure is one the counter had at some moment of the read.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace weft::handlers::status {

struct ConnectionFigures {
    std::uint64_t accepted = 0;
    std::uint64_t handled = 0;
    std::uint64_t active = 0;
    std::uint64_t reading = 0; // parked holding part of a head
    std::uint64_t writing = 0; // holding a coroutine: a request in progress
    std::uint64_t waiting = 0; // parked between requests (keep-alive)
    // By status / 100: [1] 1xx ... [5] 5xx; [0] anything else.
    std::array<std::uint64_t, 6> requests{};
    std::uint64_t body_bytes_sent = 0;

    std::uint64_t requests_total() const;
    void add(const ConnectionFigures& other);
};

struct LoopFigures {
    unsigned index = 0;
    ConnectionFigures figures;
};

// A queue wait histogram (UpstreamLoopCounters::kWaitBoundsMs) and what it
// gives.
struct WaitFigures {
    std::vector<std::uint64_t> buckets; // not cumulative; one per bound, then the rest
    std::uint64_t sum_ms = 0;
    std::uint64_t count() const;
    // The upper bound (ms) of the bucket that holds the `p` quantile (0-1);
    // the last bound for the overflow bucket; 0 with no count.
    std::uint64_t quantile_ms(double p) const;
    void add(const WaitFigures& other);
};

struct UpstreamLoopFigures {
    unsigned index = 0;
    std::uint64_t acquired = 0, waited = 0, failures = 0;
    WaitFigures wait;
};

struct ServerFigures {
    std::string address;
    bool up = true;
    std::uint64_t failures = 0; // connects that failed
};

struct UpstreamFigures {
    std::string name;
    unsigned open = 0, idle = 0, busy = 0, queued = 0, max_conns = 0;
    std::vector<UpstreamLoopFigures> loops; // the loops that used it
    UpstreamLoopFigures total;
    std::vector<ServerFigures> servers;
};

struct Figures {
    std::vector<LoopFigures> loops;
    ConnectionFigures total;
    std::vector<UpstreamFigures> upstreams;
    std::uint64_t uptime_seconds = 0;
    std::uint64_t started_unix = 0;
    std::uint64_t reloads = 0;
    std::string version, compiler, io_backend;
};

// The wait histogram's bounds, in ms.
std::vector<std::uint64_t> wait_bounds_ms();

// Reads them now; on a loop's thread (the loops' clock dates a server's
// failure).
Figures read_figures(const std::string& io_backend);

} // namespace weft::handlers::status
