// The lock the loops share an upstream's pool under: it excludes, under
// contention too, and a thread that slept on it is woken by the unlock.

#include "util/mutex.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

using namespace weft;
using namespace std::chrono_literals;

TEST_CASE("threads that contend for the lock each get it alone", "[mutex]") {
    Mutex mutex;
    // Not atomic: two holders at once would lose increments.
    unsigned long count = 0;
    int inside = 0;
    bool overlapped = false;
    constexpr int kThreads = 4;
    constexpr int kRounds = 100'000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < kRounds; ++i) {
                std::lock_guard lock(mutex);
                if (++inside != 1) overlapped = true;
                ++count;
                // Now and then a longer hold, so that waiters go to sleep.
                if (i % 4096 == 0) std::this_thread::sleep_for(100us);
                --inside;
            }
        });
    for (std::thread& thread : threads) thread.join();
    CHECK_FALSE(overlapped);
    CHECK(count == static_cast<unsigned long>(kThreads) * kRounds);
}

TEST_CASE("a thread that sleeps on the lock is woken when it is given back", "[mutex]") {
    Mutex mutex;
    mutex.lock();
    std::atomic<bool> took{false};
    std::thread waiter([&] {
        std::lock_guard lock(mutex);
        took = true;
    });
    // Long past the waiter's spin: it sleeps on the futex by now.
    std::this_thread::sleep_for(50ms);
    CHECK_FALSE(took);
    mutex.unlock();
    waiter.join(); // hangs (and the test times out) if the unlock woke nobody
    CHECK(took);
}

TEST_CASE("try_lock takes a free lock and refuses a held one", "[mutex]") {
    Mutex mutex;
    REQUIRE(mutex.try_lock());
    std::thread other([&] { CHECK_FALSE(mutex.try_lock()); });
    other.join();
    mutex.unlock();
    CHECK(mutex.try_lock());
    mutex.unlock();
}
