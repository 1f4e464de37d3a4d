#include "handlers/status/figures.hpp"

#include "fastcgi/upstream.hpp"
#include "loop/loop.hpp"
#include "loop/loop_stats.hpp"

#include <algorithm>
#include <cmath>

namespace weft::handlers::status {

namespace {

ConnectionFigures figures_of(const LoopCounters& c) {
    ConnectionFigures f;
    // Each pair read in the order that keeps it whole: a request ends after
    // it starts and a connection closes after it is handled, and counters
    // only grow, so the later read is never below the earlier.
    std::uint64_t ended = 0;
    for (unsigned status = 0; status < LoopCounters::kStatusSlots; ++status) {
        const std::uint64_t n = c.by_status[status].load();
        ended += n;
        f.requests[status >= 100 && status < 600 ? status / 100 : 0] += n;
    }
    const std::uint64_t started = c.requests_started.load();
    const std::uint64_t closed = c.closed.load();
    f.accepted = c.accepted.load();
    f.handled = c.handled.load();
    f.active = f.handled - closed;
    f.reading = c.parked_heads.load();
    // The gauges come from different moments: never below zero, and a
    // request that never ended (its coroutine destroyed by a stop past its
    // grace, or by an exception) is not counted as in progress for ever.
    const std::uint64_t open = f.active > f.reading ? f.active - f.reading : 0;
    f.writing = std::min(started - ended, open);
    f.waiting = open - f.writing;
    f.body_bytes_sent = c.body_bytes_sent.load();
    return f;
}

UpstreamLoopFigures figures_of(unsigned index, const fastcgi::UpstreamLoopCounters& c) {
    UpstreamLoopFigures f;
    f.index = index;
    f.acquired = c.acquired.load();
    f.waited = c.waited.load();
    f.failures = c.failures.load();
    for (const Counter& bucket : c.wait_ms) f.wait.buckets.push_back(bucket.load());
    f.wait.sum_ms = c.wait_sum_ms.load();
    return f;
}

UpstreamFigures figures_of(fastcgi::Upstream& upstream, std::uint64_t now_ms, unsigned loops) {
    UpstreamFigures f;
    const fastcgi::UpstreamOptions& options = upstream.options();
    f.name = options.name;
    const fastcgi::Upstream::Counts counts = upstream.counts();
    f.open = counts.open;
    f.idle = counts.idle;
    f.busy = counts.open > counts.idle ? counts.open - counts.idle : 0;
    f.queued = counts.waiting;
    f.max_conns = counts.max_conns;
    f.total.wait.buckets.assign(fastcgi::UpstreamLoopCounters::kWaitBuckets, 0);
    for (unsigned i = 0; i < loops; ++i) {
        const fastcgi::UpstreamLoopCounters* counters = upstream.loop_counters(i);
        if (!counters) continue;
        f.loops.push_back(figures_of(i, *counters));
        const UpstreamLoopFigures& here = f.loops.back();
        f.total.acquired += here.acquired;
        f.total.waited += here.waited;
        f.total.failures += here.failures;
        f.total.wait.add(here.wait);
    }
    for (std::size_t i = 0; i < options.servers.size(); ++i)
        f.servers.push_back({options.servers[i].to_string(), !upstream.server_down(i, now_ms),
                             upstream.server_failures(i)});
    return f;
}

} // namespace

std::uint64_t ConnectionFigures::requests_total() const {
    std::uint64_t total = 0;
    for (const std::uint64_t n : requests) total += n;
    return total;
}

void ConnectionFigures::add(const ConnectionFigures& o) {
    accepted += o.accepted;
    handled += o.handled;
    active += o.active;
    reading += o.reading;
    writing += o.writing;
    waiting += o.waiting;
    for (std::size_t i = 0; i < requests.size(); ++i) requests[i] += o.requests[i];
    body_bytes_sent += o.body_bytes_sent;
}

std::uint64_t WaitFigures::count() const {
    std::uint64_t total = 0;
    for (const std::uint64_t n : buckets) total += n;
    return total;
}

std::uint64_t WaitFigures::quantile_ms(double p) const {
    const std::uint64_t total = count();
    if (total == 0) return 0;
    const auto rank =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(p * double(total))));
    const std::vector<std::uint64_t> bounds = wait_bounds_ms();
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < buckets.size(); ++i) {
        seen += buckets[i];
        if (seen >= rank) return bounds[std::min(i, bounds.size() - 1)];
    }
    return bounds.back();
}

void WaitFigures::add(const WaitFigures& other) {
    buckets.resize(std::max(buckets.size(), other.buckets.size()));
    for (std::size_t i = 0; i < other.buckets.size(); ++i) buckets[i] += other.buckets[i];
    sum_ms += other.sum_ms;
}

std::vector<std::uint64_t> wait_bounds_ms() {
    const auto& bounds = fastcgi::UpstreamLoopCounters::kWaitBoundsMs;
    return {std::begin(bounds), std::end(bounds)};
}

Figures read_figures(const std::string& io_backend) {
    Figures f;
    const unsigned loops = loop_count();
    for (unsigned i = 0; i < loops; ++i) {
        const LoopCounters* counters = loop_counters(i);
        if (!counters) continue;
        f.loops.push_back({i, figures_of(*counters)});
        f.total.add(f.loops.back().figures);
    }
    Loop* loop = Loop::current();
    const std::uint64_t now_ms = loop ? loop->now() : 0;
    fastcgi::Upstream::for_each([&](fastcgi::Upstream& upstream) {
        f.upstreams.push_back(figures_of(upstream, now_ms, loops));
    });
    std::sort(f.upstreams.begin(), f.upstreams.end(),
              [](const UpstreamFigures& a, const UpstreamFigures& b) { return a.name < b.name; });
    const ProcessStats& process = process_stats();
    const std::uint64_t started = process.started_ms.load();
    f.uptime_seconds = started ? (monotonic_ms() - started) / 1000 : 0;
    f.started_unix = process.started_unix.load();
    f.reloads = process.reloads.load();
    f.version = process.version.load();
#if defined(__clang__)
    f.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    f.compiler = "g++ " __VERSION__;
#else
    f.compiler = "unknown";
#endif
    while (!f.compiler.empty() && f.compiler.back() == ' ') f.compiler.pop_back();
    f.io_backend = io_backend;
    return f;
}

} // namespace weft::handlers::status
