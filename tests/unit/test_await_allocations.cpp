// The common await (an fd, a timer, a channel) allocates nothing: counted by
// replacing operator new in this test binary (allocation_count.hpp; not in
// ASan builds).

#include "allocation_count.hpp"
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

using test::allocations;

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
