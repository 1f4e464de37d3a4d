#include "loop/loop_stats.hpp"

#include <time.h>

namespace weft {

namespace {

std::atomic<const LoopCounters*> registered[kMaxCountedLoops];
std::atomic<unsigned> highest{0};

} // namespace

void register_loop_counters(unsigned index, const LoopCounters* counters) {
    if (index >= kMaxCountedLoops) return;
    const LoopCounters* none = nullptr;
    // Release: a reader that finds the pointer finds the counters made.
    if (!registered[index].compare_exchange_strong(none, counters, std::memory_order_release))
        return;
    unsigned seen = highest.load(std::memory_order_relaxed);
    while (seen < index + 1 && !highest.compare_exchange_weak(seen, index + 1)) {
    }
}

void unregister_loop_counters(unsigned index, const LoopCounters* counters) {
    if (index >= kMaxCountedLoops) return;
    registered[index].compare_exchange_strong(counters, nullptr);
}

const LoopCounters* loop_counters(unsigned index) {
    return index < kMaxCountedLoops ? registered[index].load(std::memory_order_acquire) : nullptr;
}

unsigned loop_count() {
    return highest.load(std::memory_order_relaxed);
}

ProcessStats& process_stats() {
    static ProcessStats stats;
    return stats;
}

std::uint64_t monotonic_ms() {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1'000'000;
}

void note_process_start(const char* version) {
    ProcessStats& stats = process_stats();
    stats.version.store(version);
    std::uint64_t none = 0;
    if (stats.started_ms.compare_exchange_strong(none, monotonic_ms()))
        stats.started_unix.store(static_cast<std::uint64_t>(::time(nullptr)));
}

} // namespace weft
