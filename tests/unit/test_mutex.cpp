// The lock the loops share an upstream's pool under: it excludes, under
// contention too, and a thread that slept on it is woken by the unlock.

#include "util/mutex.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
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
    // On the heap: a waiter the unlock left asleep keeps using it after the
    // test case has failed.
    auto* mutex = new Mutex;
    mutex->lock();
    std::promise<void> took;
    std::future<void> taken = took.get_future();
    std::thread waiter([&took, mutex] {
        std::lock_guard lock(*mutex);
        took.set_value();
    });
    // Long past the waiter's spin: it sleeps on the futex by now.
    CHECK(taken.wait_for(50ms) == std::future_status::timeout);
    mutex->unlock();
    if (taken.wait_for(5s) != std::future_status::ready) {
        waiter.detach(); // asleep for good: the unlock woke nobody
        FAIL("the waiter was not woken within 5 s of the unlock");
    }
    waiter.join();
    delete mutex;
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
