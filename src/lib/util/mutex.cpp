#include "util/mutex.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace weft {

namespace {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the futex word is the atomic itself");

void futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value) {
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, nullptr, nullptr, 0);
}

void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

} // namespace

void Mutex::lock_contended() {
    // Holders keep it briefly: a short spin nearly always sees it freed.
    for (int i = 0; i < 64; ++i) {
        relax();
        if (state_.load(std::memory_order_relaxed) == kFree && try_lock()) return;
    }
    // Marked as slept on before each sleep, so the unlock that frees it
    // wakes a sleeper; a thread woken marks it again, which costs at most
    // one wake-up too many, never one too few.
    while (state_.exchange(kSleepers, std::memory_order_acquire) != kFree)
        futex(state_, FUTEX_WAIT_PRIVATE, kSleepers);
}

void Mutex::wake_one() {
    futex(state_, FUTEX_WAKE_PRIVATE, 1);
}

} // namespace weft
