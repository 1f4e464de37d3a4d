// The common await (an fd, a timer, a channel) allocates nothing: counted by
// replacing operator new in this test binary. Not in ASan builds: ASan owns
// operator new, and clang 14's ASan has no working malloc hook to count with.

#include "event/channel.hpp"
#include "event/poll_event.hpp"
#include "event/timer_event.hpp"
#include "event/waker.hpp"
#include "event_helpers.hpp"
#include "util/sanitizers.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <new>

#if !WEFT_ASAN
namespace {
std::atomic<long> allocations{0};
}

void* operator new(std::size_t size) {
    ++allocations;
    if (void* p = std::malloc(size ? size : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

TEST_CASE("an await over an fd, a timer and a channel allocates nothing", "[event]") {
    test::EventLoop t;
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    weft::PollProxy proxy(t.loop, sv[0]);
    weft::Channel<int> channel(t.loop, 4);
    long during = -1;
    int fired = 0;
    t.spawn([&] {
        // One round to warm up (the loop's task pool and run queue grow once).
        for (int round = 0; round < 101; ++round) {
            const long before = allocations.load();
            weft::PollEvent readable(proxy, weft::kReadable);
            weft::TimerEvent timer(t.loop, 60'000);
            // The channel gets its item from another coroutine while this
            // one is suspended.
            t.loop.spawn([&channel, round] { channel.try_send(round); });
            fired += weft::await_any({&readable, &timer, &channel.readable()}).index == 2;
            int v;
            channel.try_receive(v);
            if (round == 1) during = 0;
            if (round >= 1) during += allocations.load() - before;
        }
    });
    t.run();
    close(sv[0]);
    close(sv[1]);
    CHECK(fired == 101);
    CHECK(allocations.load() > 0); // the counting works: the set-up allocated
    CHECK(during == 0);
}
#endif
