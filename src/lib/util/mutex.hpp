#pragma once
// A lock for the little state the loops share, such as an upstream's pool:
// held for a few dozen instructions and nearly never contended. Taking and
// giving it back are one atomic instruction each while nobody waits; a
// thread that finds it held spins briefly, then sleeps on a futex, so a
// holder that is preempted costs the others no CPU.
//
// std::mutex, through glibc's pthread_mutex_lock and _unlock, cost a PHP
// request (two of each) about 125 instructions (callgrind); this lock took
// 127 and 146 off it in alternating runs.
//
// Three states: free, held, and held with sleepers (Drepper, "Futexes Are
// Tricky", mutex 3); only an unlock that finds sleepers makes a syscall.

#include <atomic>
#include <cstdint>

namespace weft {

class Mutex {
public:
    Mutex() = default;
    Mutex(const Mutex&) = delete;
    Mutex& operator=(const Mutex&) = delete;

    void lock() {
        if (!try_lock()) [[unlikely]]
            lock_contended();
    }
    bool try_lock() {
        std::uint32_t expected = kFree;
        return state_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire,
                                              std::memory_order_relaxed);
    }
    void unlock() {
        if (state_.exchange(kFree, std::memory_order_release) == kSleepers) [[unlikely]]
            wake_one();
    }

private:
    static constexpr std::uint32_t kFree = 0;
    static constexpr std::uint32_t kHeld = 1;
    static constexpr std::uint32_t kSleepers = 2;

    void lock_contended();
    void wake_one();

    std::atomic<std::uint32_t> state_{kFree};
};

} // namespace weft
