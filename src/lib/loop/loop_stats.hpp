#pragma once
// What each loop counts of the connections and requests it serves, and what
// the process counts of itself, for the `status` handler.
//
// Nothing shared is written per request: each loop has its own counters,
// written by its own thread only, and a reader on any loop sums them. A
// Counter is a relaxed atomic whose increment is a relaxed load and a relaxed
// store, not a locked read-modify-write: with one writer nothing is lost, a
// read from another thread is no data race (TSan, the C++ memory model), and
// the writer pays what a plain increment costs (mov, add, mov on x86-64). A
// reader sees each counter as it was at some moment; two counters read one
// after the other need not be of the same moment.

#include <atomic>
#include <cstdint>

namespace weft {

class Counter {
public:
    // By the owning thread only.
    void add(std::uint64_t n) {
        value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    void sub(std::uint64_t n) {
        value_.store(value_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
    }
    // By any thread.
    std::uint64_t load() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> value_{0};
};

// One loop's connections and requests, counted where the loop and the
// Connection pass anyway: per connection at accept and close, per request
// twice (its head read, its end), and on the way of a head that parks in
// pieces. What nginx's stub_status shows follows: active = handled - closed;
// writing (requests in progress) = started - ended; reading = parked heads;
// waiting (kept alive, idle) = the rest.
struct alignas(64) LoopCounters {
    Counter accepted; // by accept4
    Counter handled;  // given to a handler (accepted or adopted, with a stack)
    Counter closed;   // handled connections closed since
    // Connections parked holding part of a head (a gauge: up and down).
    Counter parked_heads;
    Counter requests_started; // a head read, or refused as unreadable
    // Requests ended, by status: index status & 1023 (no compare on the
    // way; a status outside 100-599 lands where the reader counts it as
    // "other"). 8 KiB a loop, one line of it touched per request.
    static constexpr unsigned kStatusSlots = 1024;
    Counter by_status[kStatusSlots];
    Counter body_bytes_sent;

    // At a request's end (the access log's point).
    void count_request(int status, std::uint64_t body_bytes) {
        by_status[static_cast<unsigned>(status) & (kStatusSlots - 1)].add(1);
        body_bytes_sent.add(body_bytes);
    }
};

// Loops with their counters, by loop index. A Loop registers its counters
// while it lives (the first loop of an index does; another of the same index
// at the same time, in a test, is not listed).
inline constexpr unsigned kMaxCountedLoops = 1024;
void register_loop_counters(unsigned index, const LoopCounters* counters);
void unregister_loop_counters(unsigned index, const LoopCounters* counters);
// The counters of loop `index`, or nullptr; `loop_count()` bounds the
// indexes ever registered.
const LoopCounters* loop_counters(unsigned index);
unsigned loop_count();

// The process: set by the binary at start and at each reload.
struct ProcessStats {
    std::atomic<std::uint64_t> reloads{0};
    std::atomic<std::uint64_t> started_ms{0}; // CLOCK_MONOTONIC; 0: not set
    std::atomic<std::uint64_t> started_unix{0};
    std::atomic<const char*> version{"unknown"};
};
ProcessStats& process_stats();
// Notes now as the process's start (the first call wins) and its version.
void note_process_start(const char* version);
// Milliseconds on CLOCK_MONOTONIC.
std::uint64_t monotonic_ms();

} // namespace weft
