// Waker: await_any / await_all over several kinds of events, timeouts,
// cancellation, replay, IGNORED, deadlock reports.

#include "event/broadcast.hpp"
#include "event/channel.hpp"
#include "event/completion_event.hpp"
#include "event/event_state.hpp"
#include "event/future.hpp"
#include "event/poll_event.hpp"
#include "event/signal_event.hpp"
#include "event/timer_event.hpp"
#include "event/trigger_event.hpp"
#include "event/waker.hpp"
#include "event_helpers.hpp"
#include "loop/io.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <thread>

using namespace std::chrono_literals;
using weft::AwaitResult;
using weft::Event;
using weft::Loop;

TEST_CASE("await_any over {fd, timer, channel} returns the winner, losers unsubscribed",
          "[event]") {
    test::EventLoop t;
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    weft::PollProxy proxy(t.loop, sv[0]);
    weft::Channel<int> channel(t.loop, 4);
    std::vector<int> winners;
    std::vector<int> expected;
    int leftovers = 0;
    t.spawn([&] {
        for (int round = 0; round < 30; ++round) {
            const int want = round % 3;
            expected.push_back(want);
            weft::PollEvent readable(proxy, weft::kReadable);
            weft::TimerEvent timer(t.loop, want == 1 ? 5 : 60'000);
            // The fd or the channel is made ready by a second coroutine.
            Loop::current()->spawn([&, want] {
                if (want == 0) REQUIRE(write(sv[1], "x", 1) == 1);
                if (want == 2) channel.try_send(round);
            });
            const AwaitResult r = weft::await_any({&readable, &timer, &channel.readable()});
            winners.push_back(r.index);
            leftovers +=
                readable.subscribers() + timer.subscribers() + channel.readable().subscribers();
            leftovers += readable.started() + timer.started() + channel.readable().started();
            char c;
            while (read(sv[0], &c, 1) == 1) {
            }
            int v;
            while (channel.try_receive(v)) {
            }
        }
    });
    t.run();
    CHECK(winners == expected);
    CHECK(leftovers == 0);
    CHECK(weft::EventState::of(t.loop).started_events() == 0);
    close(sv[0]);
    close(sv[1]);
}

TEST_CASE("await_all waits for every event, a timeout ends any wait", "[event]") {
    test::EventLoop t;
    AwaitResult all{}, timed_out{}, none_fired{};
    std::uint64_t waited = 0;
    t.spawn([&] {
        weft::TimerEvent a(t.loop, 10), b(t.loop, 30), c(t.loop, 20);
        const std::uint64_t start = Loop::current()->now();
        all = weft::await_all({&a, &b, &c});
        waited = Loop::current()->now() - start;
        weft::TimerEvent late(t.loop, 60'000);
        weft::Future<int> never(t.loop);
        timed_out = weft::await_any({&late, &never}, 15);
        none_fired = weft::await_all({&late, &never}, 5);
    });
    t.run();
    CHECK(all.index == 0);
    CHECK(waited >= 30);
    CHECK(timed_out.index == AwaitResult::kTimeout);
    CHECK(timed_out.value == -ETIMEDOUT);
    CHECK(none_fired.index == AwaitResult::kTimeout);
}

TEST_CASE("a timeout left armed by a wait that ended first times out no later wait", "[event]") {
    test::EventLoop t;
    weft::Future<int> early(t.loop), unlimited(t.loop), never(t.loop);
    AwaitResult first{}, second{}, longer{}, shorter{};
    std::uint64_t second_ms = 0, longer_ms = 0, shorter_ms = 0;
    const auto sleep_ms = [&](std::uint32_t ms) {
        weft::TimerEvent timer(t.loop, ms);
        weft::await(timer);
    };
    t.spawn([&] {
        sleep_ms(5);
        early.resolve(1);
        sleep_ms(80); // past the first wait's deadline
        unlimited.resolve(2);
    });
    t.spawn([&] {
        Loop& loop = *Loop::current();
        first = weft::await(early, 40); // fires at 5 ms: its 40 ms deadline stays armed
        std::uint64_t start = loop.now();
        second = weft::await(unlimited); // no timeout: the 40 ms one is not its
        second_ms = loop.now() - start;
        start = loop.now();
        longer = weft::await(never, 100); // a later deadline: pushed back, kept to the ms
        longer_ms = loop.now() - start;
        weft::await(early, 5'000); // ends at once, leaving 5 s armed
        start = loop.now();
        shorter = weft::await(never, 10); // an earlier one: moved, not waited for
        shorter_ms = loop.now() - start;
    });
    t.run();
    CHECK(first.index == 0);
    CHECK(second.index == 0);
    CHECK(second.value == 0);
    CHECK(second_ms >= 40);
    CHECK(longer.index == AwaitResult::kTimeout);
    CHECK(longer_ms >= 100);
    CHECK(longer_ms < 1'000);
    CHECK(shorter.index == AwaitResult::kTimeout);
    CHECK(shorter_ms >= 10);
    CHECK(shorter_ms < 1'000);
}

TEST_CASE("a once trigger rearmed waits for a new fire, and is not rearmed while shared",
          "[event]") {
    test::EventLoop t;
    AwaitResult replayed{}, after_rearm{}, fired_again{};
    bool rearmed = false, rearmed_shared = false;
    t.spawn([&] {
        auto trigger = weft::Ref<weft::TriggerEvent>::adopt(
            Event::make<weft::TriggerEvent>(t.loop, weft::TriggerEvent::Fires::once));
        trigger->fire_here();
        replayed = weft::await(*trigger, 0); // fired for good: replayed
        {
            const weft::Ref<weft::TriggerEvent> held = trigger; // a fire in flight holds one
            rearmed_shared = trigger->rearm();
        }
        rearmed = trigger->rearm();
        after_rearm = weft::await(*trigger, 10); // new again: nothing to replay
        Loop::current()->spawn([trigger] { trigger->fire(); });
        fired_again = weft::await(*trigger, 1'000);
    });
    t.run();
    CHECK(replayed.index == 0);
    CHECK_FALSE(rearmed_shared);
    CHECK(rearmed);
    CHECK(after_rearm.index == AwaitResult::kTimeout);
    CHECK(fired_again.index == 0);
    CHECK(fired_again.value == 1);
}

TEST_CASE("an event completed before the wait is replayed, never lost", "[event]") {
    test::EventLoop t;
    weft::Future<std::string> future(t.loop);
    AwaitResult r{};
    std::uint64_t arms_before = 0, arms_after = 0;
    t.spawn([&] {
        future.resolve("early");
        arms_before = t.loop.timers().arms();
        // Completed between "subscribe" and "suspend": answered while
        // subscribing, so the coroutine does not even suspend.
        weft::TimerEvent timer(t.loop, 60'000);
        r = weft::await_any({&timer, &future});
        arms_after = t.loop.timers().arms();
    });
    t.run();
    CHECK(r.index == 1);
    CHECK(future.value() == "early");
    CHECK(arms_after - arms_before == 1); // the loser's start, nothing more
}

TEST_CASE("cancelling a waiting coroutine ends its wait with kCancelled", "[event]") {
    test::EventLoop t;
    AwaitResult r{};
    weft::Coroutine* waiter = nullptr;
    t.spawn([&] {
        waiter = weft::Coroutine::current();
        weft::Future<int> never(t.loop);
        r = weft::await(never);
    });
    t.spawn([&] { Loop::current()->cancel(*waiter); });
    t.run();
    CHECK(r.index == AwaitResult::kCancelled);
    CHECK(r.value == -ECANCELED);
}

TEST_CASE("a cancel and a wake-up in one tick: the event's value is kept, the cancel ends "
          "the next wait",
          "[event]") {
    test::EventLoop t;
    weft::Future<int> future(t.loop);
    AwaitResult first{}, second{};
    weft::Coroutine* waiter = nullptr;
    t.spawn([&] {
        waiter = weft::Coroutine::current();
        first = weft::await(future);
        weft::Future<int> never(t.loop);
        second = weft::await(never, 1000);
    });
    SECTION("the cancel comes after the wake-up") {
        t.spawn([&] {
            future.resolve(5);                // queues the waiter
            Loop::current()->cancel(*waiter); // must not eat the 5
        });
    }
    SECTION("the cancel comes first") {
        t.spawn([&] {
            Loop::current()->cancel(*waiter); // queues the waiter with -ECANCELED...
            future.resolve(5);                // ...and then its event fires too
        });
    }
    t.run();
    CHECK(first.index == 0);
    CHECK(future.value() == 5);
    CHECK(second.index == AwaitResult::kCancelled);
}

TEST_CASE("a coroutine destroyed while queued is never resumed (IGNORED)", "[event]") {
    test::EventLoop t;
    weft::Future<int> future(t.loop);
    bool resumed = false;
    bool unwound = false;
    t.spawn([&] {
        struct Guard {
            bool* flag;
            ~Guard() { *flag = true; }
        } guard{&unwound};
        weft::await(future);
        resumed = true;
    });
    t.spawn([&] {
        future.resolve(1);          // queues the first coroutine...
        Loop::current()->stop(0ms); // ...which the stop destroys before it runs
    });
    t.loop.run();
    CHECK_FALSE(resumed);
    CHECK(unwound);
    CHECK(future.subscribers() == 0);
    CHECK(weft::EventState::of(t.loop).started_events() == 0);
}

TEST_CASE("a coroutine is an event that completes with its result", "[event]") {
    test::EventLoop t;
    AwaitResult r{}, again{};
    t.spawn([&] {
        weft::Coroutine* worker = Loop::current()->spawn([] {
            weft::io::sleep(10);
            return 77;
        });
        auto done = weft::CompletionEvent::of(*worker);
        r = weft::await(*done);
        again = weft::await(*done); // replayed
    });
    t.run();
    CHECK(r.index == 0);
    CHECK(r.value == 77);
    CHECK(again.value == 77);
}

TEST_CASE("a trigger fired from other threads wakes its loop's waiter", "[event]") {
    test::EventLoop t;
    auto trigger = weft::Ref<weft::TriggerEvent>::adopt(Event::make<weft::TriggerEvent>(t.loop));
    std::int64_t total = 0;
    std::thread firer;
    t.spawn([&] {
        firer = std::thread([&] {
            for (int i = 0; i < 1000; ++i) trigger->fire();
        });
        while (total < 1000) {
            const AwaitResult r = weft::await(*trigger, 5000);
            if (!r.fired()) break;
            total += r.value; // fires before delivery are counted together
        }
    });
    t.run();
    firer.join();
    CHECK(total == 1000);
}

TEST_CASE("a trigger that fires once is not lost by a waiter between two awaits of it", "[event]") {
    // An upstream's queued request: its ClientWatch awaits {its trigger, its
    // client}; the client wakes it, and before it awaits the trigger again,
    // another task hands it a backend and fires. The fire must stay.
    test::EventLoop t;
    auto fires = [&](weft::TriggerEvent::Fires mode) {
        auto trigger =
            weft::Ref<weft::TriggerEvent>::adopt(Event::make<weft::TriggerEvent>(t.loop, mode));
        auto other = weft::Ref<weft::TriggerEvent>::adopt(Event::make<weft::TriggerEvent>(t.loop));
        AwaitResult first{}, second{};
        t.spawn([&] {
            first = weft::await_any({trigger.get(), other.get()}, 5000);
            weft::yield(); // the firer runs here, while nothing is subscribed
            second = weft::await(*trigger, 200);
        });
        t.spawn([&] {
            other->fire_here();
            trigger->fire_here();
        });
        t.run();
        CHECK(first.index == 1);
        return second;
    };
    const AwaitResult once = fires(weft::TriggerEvent::Fires::once);
    CHECK(once.index == 0);
    CHECK(once.value == 1);
    // The ordinary trigger is an edge: the same order loses it (and so did
    // the upstream queue's, until it fired once).
    CHECK(fires(weft::TriggerEvent::Fires::again).index == AwaitResult::kTimeout);
}

TEST_CASE("a signal event is notified when its loop is told of the signal", "[event]") {
    test::EventLoop t;
    AwaitResult r{};
    t.spawn([&] {
        weft::SignalEvent hup(t.loop, SIGHUP);
        weft::SignalEvent usr1(t.loop, SIGUSR1);
        Loop* loop = Loop::current();
        loop->spawn([loop] { loop->deliver_signal(SIGUSR1); });
        r = weft::await_any({&hup, &usr1});
    });
    t.run();
    CHECK(r.index == 1);
    CHECK(r.value == SIGUSR1);
}

TEST_CASE("a periodic timer ticks until stopped", "[event]") {
    test::EventLoop t;
    std::vector<std::int64_t> ticks;
    t.spawn([&] {
        weft::TimerEvent tick(t.loop, 5, true);
        for (int i = 0; i < 3; ++i) {
            // Keep it started across waits, or each wait restarts it.
            tick.start();
            ticks.push_back(weft::await(tick).value);
        }
        while (tick.started()) tick.stop();
    });
    t.run();
    // Every tick is counted, also one that comes while nobody waits (between
    // two awaits, on a slow machine): the numbers rise, starting from 1.
    REQUIRE(ticks.size() == 3);
    CHECK(ticks[0] == 1);
    CHECK(ticks[1] > ticks[0]);
    CHECK(ticks[2] > ticks[1]);
}

namespace {
// A loop whose deadlock reports are kept; `stop` ends the loop at a report.
struct Watched {
    test::EventLoop t;
    std::string report;
    explicit Watched(bool stop) {
        auto& state = weft::EventState::of(t.loop);
        state.detect_deadlocks(true);
        state.set_deadlock_reporter([this, stop](const std::string& text) {
            report = text;
            if (stop) t.loop.stop(0ms);
        });
    }
};
} // namespace

TEST_CASE("a deadlock is reported with what each coroutine awaits", "[event]") {
    SECTION("two coroutines await each other's futures") {
        Watched w(true);
        weft::Future<int> a(w.t.loop), b(w.t.loop);
        w.t.loop.spawn([&] {
            weft::await(a);
            b.resolve(1);
        });
        w.t.loop.spawn([&] {
            weft::await(b);
            a.resolve(1);
        });
        w.t.loop.run();
        CHECK(w.report.find("deadlock on loop 0: 2 coroutines wait") != std::string::npos);
        CHECK(w.report.find("waiting on any of {future started, 1 waiting}") != std::string::npos);
    }
    SECTION("a hidden signal event is no way out") {
        Watched w(true);
        weft::SignalEvent hup(w.t.loop, SIGHUP, Event::kHidden);
        w.t.loop.spawn([&] { weft::await(hup); });
        w.t.loop.run();
        CHECK(w.report.find("signal started hidden, 1 waiting 1") != std::string::npos);
    }
    SECTION("a one-shot timer that has fired is no way out") {
        Watched w(true);
        weft::Future<int> never(w.t.loop);
        w.t.loop.spawn([&] {
            weft::TimerEvent tick(w.t.loop, 5);
            weft::await_all({&tick, &never});
        });
        std::thread watchdog([&] {
            std::this_thread::sleep_for(2000ms); // ends the test if nothing is reported
            w.t.loop.post([&] { w.t.loop.stop(0ms); });
        });
        w.t.loop.run();
        watchdog.join();
        CHECK(w.report.find("1 coroutines wait") != std::string::npos);
    }
    SECTION("a broadcast subscriber is a way out: publishers are other threads") {
        Watched w(false);
        weft::Broadcast<int> room;
        int got = 0;
        std::atomic<bool> subscribed{false};
        w.t.loop.spawn([&] {
            weft::Broadcast<int>::Subscriber me(room, w.t.loop);
            subscribed = true;
            me.channel().receive(got);
        });
        std::thread publisher([&] {
            while (!subscribed) std::this_thread::sleep_for(1ms);
            std::this_thread::sleep_for(50ms); // the loop goes idle meanwhile
            room.publish(7);
        });
        w.t.run();
        publisher.join();
        CHECK(got == 7);
        CHECK(w.report.empty());
    }
    SECTION("a visible signal event is a way out: no report") {
        Watched w(false);
        weft::SignalEvent hup(w.t.loop, SIGHUP);
        w.t.loop.spawn([&] { weft::await(hup); });
        std::thread later([&] {
            std::this_thread::sleep_for(50ms); // the loop goes idle meanwhile
            w.t.loop.post([&] { w.t.loop.deliver_signal(SIGHUP); });
        });
        w.t.run();
        later.join();
        CHECK(w.report.empty());
    }
}

TEST_CASE("a trigger disposed while a fire is in flight lives until it is delivered", "[event]") {
    test::EventLoop t;
    std::atomic<bool> fired{false};
    t.spawn([&] {
        auto* trigger = Event::make<weft::TriggerEvent>(t.loop);
        std::thread other([&] {
            trigger->fire(); // posts a delivery holding a reference
            fired = true;
        });
        other.join();
        trigger->dispose();  // the creator lets go; the delivery still holds it
        weft::io::sleep(10); // the delivery runs on a closed, live event
    });
    t.run();
    CHECK(fired); // and ASan/LSan see no use after free and no leak
}

TEST_CASE("await_all does not end early when its first event answered at once", "[event]") {
    test::EventLoop t;
    weft::Future<int> done(t.loop), later(t.loop);
    done.resolve(1);
    AwaitResult r{};
    t.spawn([&] { r = weft::await_all({&done, &later}, 50); });
    t.run();
    CHECK(r.index == AwaitResult::kTimeout);
}

TEST_CASE("disposing a heap event that a coroutine awaits frees it only after the wait",
          "[event]") {
    test::EventLoop t;
    auto* future = Event::make<weft::Future<int>>(t.loop);
    AwaitResult r{};
    t.spawn([&] { r = weft::await(*future); });
    t.spawn([&] { future->dispose(); }); // closes: wakes the waiter, which still holds it
    t.run();
    CHECK(r.index == 0);
    CHECK(r.value == -ECANCELED);
}

TEST_CASE("a wait on its connection's peer ends at the peer's end, not at its bytes, and again at "
          "once",
          "[event]") {
    test::EventLoop t;
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    weft::TriggerEvent trigger(t.loop);
    AwaitResult after_bytes{}, at_end{}, again{}, unwatched{};
    const auto watch_peer = [&](std::int64_t timeout_ms) {
        weft::Waker waker(weft::Waker::Mode::any, 1);
        waker.resume_when(trigger);
        waker.resume_when_peer_ends();
        return waker.wait(timeout_ms);
    };
    const std::uint16_t handler = t.loop.add_handler([&](int) -> std::int64_t {
        after_bytes = watch_peer(5'000); // bytes come, then the trigger fires
        at_end = watch_peer(5'000);      // the peer shuts its side
        again = watch_peer(5'000);       // seen already: at once
        unwatched = weft::await(trigger, 20);
        return weft::yield_value(weft::Op::abort);
    });
    int adopted = -1;
    t.loop.post([&] { adopted = t.loop.adopt(sv[0], handler); });
    t.spawn([&] {
        weft::io::sleep(20); // the handler waits first
        REQUIRE(::write(sv[1], "next", 4) == 4);
        weft::io::sleep(20);
        trigger.fire_here();
        weft::io::sleep(20);
        ::shutdown(sv[1], SHUT_WR);
    });
    t.run();
    ::close(sv[1]);
    CHECK(adopted == 0);
    CHECK(after_bytes.index == 0);
    CHECK(at_end.index == AwaitResult::kPeerEnd);
    CHECK(at_end.value == weft::kPeerClosed);
    CHECK(again.index == AwaitResult::kPeerEnd);
    CHECK(unwatched.index == AwaitResult::kTimeout);
}
