// PollProxy and PollEvent: several waiters on one fd, one registration.

#include "coro/coroutine.hpp"
#include "event/poll_event.hpp"
#include "event/trigger_event.hpp"
#include "event/waker.hpp"
#include "event_helpers.hpp"
#include "loop/io.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <string>

using weft::AwaitResult;
using weft::Loop;

namespace {
struct SocketPair {
    int fd[2];
    SocketPair() {
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) == 0);
    }
    ~SocketPair() {
        if (fd[0] >= 0) close(fd[0]);
        if (fd[1] >= 0) close(fd[1]);
    }
};
} // namespace

TEST_CASE("a reader and a writer wait on one fd through one registration", "[event]") {
    test::EventLoop t;
    SocketPair sp;
    weft::PollProxy proxy(t.loop, sp.fd[0]);
    // Fill fd[0]'s send buffer so the writer must wait.
    std::string big(1 << 16, 'x');
    while (send(sp.fd[0], big.data(), big.size(), MSG_DONTWAIT) > 0) {
    }
    AwaitResult reader{}, writer{};
    std::uint64_t ctl_before = 0, ctl_after_both = 0;
    t.spawn([&] {
        ctl_before = t.loop.stats().epoll_ctl;
        weft::PollEvent readable(proxy, weft::kReadable);
        reader = weft::await(readable);
    });
    t.spawn([&] {
        weft::PollEvent writable(proxy, weft::kWritable);
        writer = weft::await(writable);
    });
    t.spawn([&] {
        ctl_after_both = t.loop.stats().epoll_ctl;
        // Wake the reader first: the writer must stay asleep until room frees.
        REQUIRE(write(sp.fd[1], "r", 1) == 1);
        Loop::current()->spawn([&] {
            weft::io::sleep(20);
            std::string sink(1 << 16, '\0'); // not on the 64 KiB coroutine stack
            while (read(sp.fd[1], sink.data(), sink.size()) > 0) {
            }
        });
    });
    t.run();
    CHECK(reader.index == 0);
    CHECK(reader.value == weft::kReadable);
    CHECK(writer.index == 0);
    CHECK(writer.value == weft::kWritable);
    // One registration for the fd: an ADD for the reader, a MOD to the union
    // for the writer.
    CHECK(ctl_after_both - ctl_before == 2);
    CHECK(t.table[sp.fd[0]].registered == (weft::kReadable | weft::kWritable));
}

TEST_CASE("a hang-up wakes every waiter on the fd, writers included", "[event]") {
    test::EventLoop t;
    SocketPair sp;
    weft::PollProxy proxy(t.loop, sp.fd[0]);
    std::string big(1 << 16, 'x');
    while (send(sp.fd[0], big.data(), big.size(), MSG_DONTWAIT) > 0) {
    }
    AwaitResult reader{}, writer{}, late{};
    t.spawn([&] {
        weft::PollEvent readable(proxy, weft::kReadable);
        reader = weft::await(readable);
    });
    t.spawn([&] {
        weft::PollEvent writable(proxy, weft::kWritable);
        writer = weft::await(writable);
        // The hang-up stays: a later waiter is told at once.
        weft::PollEvent again(proxy, weft::kWritable);
        late = weft::await(again, 1000);
    });
    t.spawn([&] {
        close(sp.fd[1]);
        sp.fd[1] = -1;
    });
    t.run();
    CHECK(reader.value == weft::kHangup);
    CHECK(writer.value == weft::kHangup);
    CHECK(late.value == weft::kHangup);
}

TEST_CASE("a watch for the peer's end is not woken by its bytes", "[event]") {
    // The FastCGI handler's watch for a client that leaves: its next
    // (pipelined) request must not wake it, its shutdown must.
    test::EventLoop t;
    SocketPair sp;
    weft::PollProxy proxy(t.loop, sp.fd[0]);
    AwaitResult ended{};
    bool shut = false, shut_when_woken = false;
    std::uint64_t ctl_before = 0, ctl_after = 0;
    t.spawn([&] {
        weft::PollEvent readable(proxy, weft::kReadable);
        ctl_before = t.loop.stats().epoll_ctl;
        weft::PollEvent peer_end(proxy, weft::kPeerClosed);
        // Readable registered already: asking for the end too costs nothing.
        REQUIRE(weft::await_any({&readable, &peer_end}, 0).index == weft::AwaitResult::kTimeout);
        ctl_after = t.loop.stats().epoll_ctl;
    });
    t.run();
    CHECK(ctl_after - ctl_before == 1); // the ADD for readable, none for the end

    SocketPair other;
    weft::PollProxy watched(t.loop, other.fd[0]);
    t.spawn([&] {
        weft::PollEvent peer_end(watched, weft::kPeerClosed);
        ended = weft::await(peer_end, 5000);
        shut_when_woken = shut;
    });
    t.spawn([&] {
        REQUIRE(write(other.fd[1], "GET / HTTP/1.1\r\n\r\n", 18) == 18);
        weft::io::sleep(50);
        shut = true;
        REQUIRE(shutdown(other.fd[1], SHUT_WR) == 0);
    });
    t.run();
    CHECK(ended.index == 0);
    CHECK((ended.value & weft::kPeerClosed) != 0);
    CHECK(shut_when_woken);
}

TEST_CASE("readiness that came while nobody waited is not lost", "[event]") {
    test::EventLoop t;
    SocketPair sp;
    weft::PollProxy proxy(t.loop, sp.fd[0]);
    AwaitResult r{};
    t.spawn([&] {
        {
            // Register, then stop waiting (a timeout) before data comes.
            weft::PollEvent readable(proxy, weft::kReadable);
            weft::await(readable, 5);
        }
        REQUIRE(write(sp.fd[1], "x", 1) == 1);
        weft::io::sleep(20); // the edge arrives while nobody waits
        weft::PollEvent readable(proxy, weft::kReadable);
        r = weft::await(readable, 1000);
    });
    t.run();
    CHECK(r.index == 0);
    CHECK(r.value == weft::kReadable);
}

TEST_CASE("a waiter already woken by another event leaves the fd's readiness to the next",
          "[event]") {
    test::EventLoop t;
    SocketPair shared, other;
    weft::PollProxy proxy(t.loop, shared.fd[0]), other_proxy(t.loop, other.fd[0]);
    AwaitResult b{}, a{};
    t.spawn([&] { // B tries the syscall first, as io::read does, then waits
        char c;
        REQUIRE(read(shared.fd[0], &c, 1) < 0);
        weft::PollEvent readable(proxy, weft::kReadable);
        b = weft::await(readable, 1000);
    });
    t.spawn([&] { // A waits on the other fd or the shared one
        weft::PollEvent readable(proxy, weft::kReadable), on_other(other_proxy, weft::kReadable);
        a = weft::await_any({&on_other, &readable});
    });
    t.spawn([&] { // both ready in one tick: A's other fd first
        // Once both are registered (the ring arms polls at the tick's end,
        // in the order asked, and one ready then completes at once).
        weft::io::sleep(10);
        REQUIRE(write(other.fd[1], "x", 1) == 1);
        REQUIRE(write(shared.fd[1], "y", 1) == 1);
    });
    t.run();
    CHECK(a.index == 0);
    CHECK(b.fired()); // not a timeout with a byte left unread
}

// --- DirectWait: one coroutine's wait on the fd without an event ------------

TEST_CASE("a direct wait takes the fd's readiness, or readiness remembered at once", "[event]") {
    test::EventLoop t;
    SocketPair sp;
    weft::PollProxy proxy(t.loop, sp.fd[0]);
    std::int64_t first = 1, second = 1;
    bool fired_at_once = false, remembered_at_once = false;
    t.spawn([&] {
        {
            weft::PollProxy::DirectWait wait(proxy, weft::kReadable);
            fired_at_once = wait.fired();
            first = wait.wait(5'000, false); // the byte comes 20 ms later
        }
        char c;
        REQUIRE(read(sp.fd[0], &c, 1) == 1);
        REQUIRE(write(sp.fd[1], "y", 1) == 1);
        weft::io::sleep(20); // its edge comes while nobody waits
        weft::PollProxy::DirectWait wait(proxy, weft::kReadable);
        remembered_at_once = wait.fired();
        second = wait.wait(5'000, false);
    });
    t.spawn([&] {
        weft::io::sleep(20);
        REQUIRE(write(sp.fd[1], "x", 1) == 1);
    });
    t.run();
    CHECK_FALSE(fired_at_once);
    CHECK(first == 0);
    CHECK(remembered_at_once);
    CHECK(second == 0);
}

TEST_CASE("a direct wait times out, and its timer left armed ends no later wait", "[event]") {
    test::EventLoop t;
    SocketPair sp;
    weft::PollProxy proxy(t.loop, sp.fd[0]);
    weft::TriggerEvent trigger(t.loop);
    std::int64_t timed_out = 0, fired = 1;
    AwaitResult later{};
    t.spawn([&] {
        {
            weft::PollProxy::DirectWait wait(proxy, weft::kReadable);
            timed_out = wait.wait(10, false);
        }
        {
            // Fired at 5 ms: its 40 ms deadline stays armed on the task's
            // timer, and comes during the wait below.
            weft::PollProxy::DirectWait wait(proxy, weft::kReadable);
            fired = wait.wait(40, false);
        }
        later = weft::await(trigger); // fired at 100 ms, no timeout
    });
    t.spawn([&] {
        weft::io::sleep(25);
        REQUIRE(write(sp.fd[1], "x", 1) == 1);
        weft::io::sleep(100);
        trigger.fire_here();
    });
    t.run();
    CHECK(timed_out == -ETIMEDOUT);
    CHECK(fired == 0);
    CHECK(later.index == 0);
}

TEST_CASE("a cancel ends a direct wait, and a hang-up fires one for writing", "[event]") {
    test::EventLoop t;
    SocketPair sp;
    weft::PollProxy proxy(t.loop, sp.fd[0]);
    std::string big(1 << 16, 'x');
    while (send(sp.fd[0], big.data(), big.size(), MSG_DONTWAIT) > 0) {
    }
    weft::Coroutine* waiting = nullptr;
    std::int64_t cancelled = 0, hung_up = 1;
    t.spawn([&] {
        waiting = weft::Coroutine::current();
        {
            weft::PollProxy::DirectWait wait(proxy, weft::kReadable);
            cancelled = wait.wait(5'000, false);
        }
        weft::PollProxy::DirectWait wait(proxy, weft::kWritable); // the buffer is full
        hung_up = wait.wait(5'000, false);
    });
    t.spawn([&] {
        weft::io::sleep(20);
        t.loop.cancel(*waiting);
        weft::io::sleep(20);
        close(sp.fd[1]);
        sp.fd[1] = -1;
    });
    t.run();
    CHECK(cancelled == -ECANCELED);
    CHECK(hung_up == 0);
}
