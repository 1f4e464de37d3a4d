// EventWait: one coroutine's direct wait for one event, without a Waker
// (event/direct_wait.hpp). PollProxy::DirectWait's own are in
// test_poll_event.cpp.

#include "coro/coroutine.hpp"
#include "event/channel.hpp"
#include "event/direct_wait.hpp"
#include "event/poll_event.hpp"
#include "event/trigger_event.hpp"
#include "event/waker.hpp"
#include "event_helpers.hpp"
#include "loop/io.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

using weft::Event;
using weft::EventWait;
using weft::TriggerEvent;

TEST_CASE("an event wait ends when its event fires, or at once when it completed before",
          "[event]") {
    test::EventLoop t;
    TriggerEvent again(t.loop), once(t.loop, TriggerEvent::Fires::once);
    std::int64_t woke = 1, result = 0, woke_completed = 1;
    bool fired_at_once = true, completed_at_once = false;
    t.spawn([&] {
        {
            EventWait wait(again);
            fired_at_once = wait.fired();
            woke = wait.wait(5'000, false); // fired 20 ms later
            result = wait.result();
        }
        once.fire_here(); // completes: a later wait gets it at once
        EventWait wait(once);
        completed_at_once = wait.fired();
        woke_completed = wait.wait(5'000, false);
    });
    t.spawn([&] {
        weft::io::sleep(20);
        again.fire_here();
    });
    t.run();
    CHECK_FALSE(fired_at_once);
    CHECK(woke == 0);
    CHECK(result == 1);
    CHECK(completed_at_once);
    CHECK(woke_completed == 0);
}

TEST_CASE("an event wait times out, and its timer left armed ends no later Waker wait", "[event]") {
    test::EventLoop t;
    TriggerEvent first(t.loop), second(t.loop), later(t.loop);
    std::int64_t timed_out = 0, fired = 1;
    weft::AwaitResult after{};
    t.spawn([&] {
        {
            EventWait wait(first);
            timed_out = wait.wait(10, false);
        }
        {
            EventWait wait(second); // fired at 5 ms; its 40 ms deadline stays armed
            fired = wait.wait(40, false);
        }
        after = weft::await(later); // fired at 100 ms, no timeout
    });
    t.spawn([&] {
        weft::io::sleep(25);
        second.fire_here();
        weft::io::sleep(100);
        later.fire_here();
    });
    t.run();
    CHECK(timed_out == -ETIMEDOUT);
    CHECK(fired == 0);
    CHECK(after.index == 0);
}

TEST_CASE("an event that fires after a cancel woke its wait wins, and the cancel ends the next "
          "wait",
          "[event]") {
    test::EventLoop t;
    TriggerEvent again(t.loop), other(t.loop);
    weft::Coroutine* waiting = nullptr;
    std::int64_t woke = 1, next = 0, result = 0;
    t.spawn([&] {
        waiting = weft::Coroutine::current();
        {
            EventWait wait(again);
            woke = wait.wait(5'000, false);
            result = wait.result();
        }
        EventWait wait(other); // never fires
        next = wait.wait(5'000, false);
    });
    t.spawn([&] {
        weft::io::sleep(20);
        t.loop.cancel(*waiting); // queued with the cancel, then the event fires
        again.fire_here();
    });
    t.run();
    CHECK(woke == 0);
    CHECK(result == 1);
    CHECK(next == -ECANCELED);
}

TEST_CASE("a heap event disposed while an event wait holds it is freed only after", "[event]") {
    test::EventLoop t;
    auto* event = Event::make<TriggerEvent>(t.loop);
    std::int64_t woke = 1, result = 0;
    t.spawn([&] {
        EventWait wait(*event);
        woke = wait.wait(5'000, false);
        result = wait.result();
    });
    t.spawn([&] {
        weft::io::sleep(20);
        event->dispose(); // closes it: the wait fires with -ECANCELED
    });
    t.run();
    CHECK(woke == 0);
    CHECK(result == -ECANCELED);
}

TEST_CASE("an event's direct wait and its subscribers are all told: a second wait subscribes, a "
          "Waker beside them too",
          "[event]") {
    test::EventLoop t;
    TriggerEvent event(t.loop);
    std::int64_t first = 1, second = 1;
    weft::AwaitResult third{};
    const weft::Callback* direct = nullptr;
    bool second_subscribed = false;
    t.spawn([&] {
        EventWait wait(event);
        direct = event.direct();
        first = wait.wait(5'000, false);
    });
    t.spawn([&] {
        EventWait wait(event); // the event has its direct wait: this one subscribes
        second_subscribed = event.direct() == direct && event.subscribers() == 1;
        second = wait.wait(5'000, false);
    });
    t.spawn([&] { third = weft::await(event); });
    t.spawn([&] {
        weft::io::sleep(20);
        CHECK(event.subscribers() == 2); // the second wait and the Waker
        event.fire_here();
    });
    t.run();
    CHECK(direct != nullptr);
    CHECK(second_subscribed);
    CHECK(first == 0);
    CHECK(second == 0);
    CHECK(third.index == 0);
    CHECK(event.direct() == nullptr);
    CHECK(event.subscribers() == 0);
}

TEST_CASE("a level-triggered event tells its direct wait alone: a channel's item", "[event]") {
    test::EventLoop t;
    weft::Channel<int> channel(t.loop, 4);
    std::int64_t woke = 1;
    bool waited = false;
    t.spawn([&] {
        EventWait wait(channel.readable());
        waited = !wait.fired();
        woke = wait.wait(5'000, false);
    });
    t.spawn([&] {
        weft::io::sleep(20);
        CHECK(channel.try_send(7));
    });
    t.run();
    CHECK(waited);
    CHECK(woke == 0);
}

TEST_CASE("a fired event wait leaves its event: the fd's next readiness is the next wait's",
          "[event]") {
    // Found by review: a fired wait that stayed its PollEvent's direct wait
    // kept the event heard, so the proxy took the next readiness for it,
    // and a later wait slept to its timeout with a byte unread.
    test::EventLoop t;
    int fd[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) == 0);
    weft::PollProxy proxy(t.loop, fd[0]);
    weft::PollEvent readable(proxy, weft::kReadable);
    std::int64_t first = 1, second = 1;
    t.spawn([&] {
        {
            EventWait wait(readable);
            first = wait.wait(2'000, false); // the first byte
            char c;
            REQUIRE(read(fd[0], &c, 1) == 1);
            weft::io::sleep(50); // still in scope when the second byte comes
        }
        EventWait again(readable); // the byte waits: it fires at once
        second = again.wait(300, false);
    });
    t.spawn([&] {
        weft::io::sleep(10);
        REQUIRE(write(fd[1], "a", 1) == 1);
        weft::io::sleep(20);
        REQUIRE(write(fd[1], "b", 1) == 1);
    });
    t.run();
    CHECK(first == 0);
    CHECK(second == 0);
    close(fd[0]);
    close(fd[1]);
}
