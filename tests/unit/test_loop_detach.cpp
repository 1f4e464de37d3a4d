// Op::detach and stop hooks, on a real loop over a socketpair: a connection's
// fd outlives its coroutine for the watcher attached to it, which sees the
// readiness the connection left and closes it as a connection is counted
// closed; a loop's stop runs its hooks once, before parked connections close.
//
// Catch2's assertions are not for coroutines: code on the loop records what
// it sees, and the test checks it after the loop has run.

#include "loop/io.hpp"
#include "loop/loop.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using weft::kReadable;
using weft::kWritable;
using weft::Loop;
using weft::Op;
using weft::yield_value;

namespace {

struct Pair {
    int fd[2] = {-1, -1};
    Pair() { REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) == 0); }
    ~Pair() {
        if (fcntl(fd[1], F_GETFD) != -1) close(fd[1]);
    }
};

// A session that owns a detached fd: it answers each batch of bytes it reads
// with "[batch]", and closes the fd through the loop after a "!".
struct Session : weft::FdWatcher {
    Loop& loop;
    int fd;
    std::string got;
    std::vector<std::uint8_t> calls; // the readiness of each on_ready
    std::size_t live_tasks_at_first_call = 99;
    bool closed = false;

    Session(Loop& l, int f) : weft::FdWatcher{on_ready}, loop(l), fd(f) {}

    static void on_ready(weft::FdWatcher& self, std::uint8_t ready) {
        auto& s = static_cast<Session&>(self);
        if (s.calls.empty()) s.live_tasks_at_first_call = s.loop.live_tasks();
        s.calls.push_back(ready);
        char buffer[64];
        std::string batch;
        ssize_t n;
        while ((n = weft::io::recv_now(s.fd, buffer, sizeof buffer)) > 0)
            batch.append(buffer, static_cast<std::size_t>(n));
        if (batch.empty()) return;
        s.got += batch;
        const std::string reply = "[" + batch + "]";
        weft::io::send_now(s.fd, reply.data(), reply.size());
        if (batch.find('!') == std::string::npos) return;
        s.closed = true;
        s.loop.close_fd(s.fd);
    }
};

} // namespace

TEST_CASE("a connection that ends with Op::detach leaves its fd to the watcher attached to it",
          "[loop]") {
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open() == 0);
    Pair pair;
    Session session(loop, pair.fd[0]);
    std::string handler_read;
    const std::uint16_t handler = loop.add_handler([&](int fd) -> std::int64_t {
        // Waits for bytes, then for room to write: the fd's registration
        // covers both, so attaching the watcher raises no new edge, and the
        // rest of "hello world" (it read 5 bytes) is known only to the
        // entry: the watcher must hear of it at the detach.
        char buffer[5];
        const ssize_t n = weft::io::read(fd, buffer, sizeof buffer);
        if (n > 0) handler_read.assign(buffer, static_cast<std::size_t>(n));
        weft::io::wait(fd, kWritable);
        if (loop.watch_fd(fd, session, kReadable | kWritable) != 0) return 0;
        return yield_value(Op::detach);
    });
    int adopted = -1;
    std::string client_got;
    loop.post([&] { adopted = loop.adopt(pair.fd[0], handler); });
    loop.spawn([&] {
        const int fd = pair.fd[1];
        weft::io::sleep(20); // the handler waits first
        weft::io::write(fd, "hello world", 11);
        char buffer[64];
        ssize_t n;
        while (!client_got.ends_with("]") && (n = weft::io::read(fd, buffer, sizeof buffer)) > 0)
            client_got.append(buffer, static_cast<std::size_t>(n));
        // The connection has ended: only the session reads now.
        weft::io::write(fd, "!", 1);
        while ((n = weft::io::read(fd, buffer, sizeof buffer)) > 0)
            client_got.append(buffer, static_cast<std::size_t>(n));
        loop.stop(1s);
    });
    loop.spawn([&] {
        // A session that never answers must not hang the test.
        weft::io::sleep(5'000);
        ::shutdown(pair.fd[1], SHUT_RDWR);
    });
    loop.run();
    CHECK(adopted == 0);
    CHECK(handler_read == "hello");
    CHECK(client_got == "[ world][!]");
    CHECK(session.got == " world!");
    REQUIRE_FALSE(session.calls.empty());
    CHECK((session.calls[0] & kReadable) != 0);
    CHECK(session.live_tasks_at_first_call == 2); // the connection's task is gone
    CHECK(session.closed);
    CHECK(loop.counters().closed.load() == 1);
    CHECK(loop.counters().handled.load() == 1);
    errno = 0;
    CHECK(fcntl(pair.fd[0], F_GETFD) == -1);
    CHECK(errno == EBADF);
}

TEST_CASE("Op::detach without a watcher closes the connection", "[loop]") {
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open() == 0);
    Pair pair;
    const std::uint16_t handler =
        loop.add_handler([](int) -> std::int64_t { return yield_value(Op::detach); });
    loop.post([&] { loop.adopt(pair.fd[0], handler); });
    ssize_t read_result = 1;
    loop.spawn([&] {
        char c;
        read_result = weft::io::read(pair.fd[1], &c, 1);
        loop.stop(1s);
    });
    loop.run();
    CHECK(read_result == 0);
    CHECK(loop.counters().closed.load() == 1);
    errno = 0;
    CHECK(fcntl(pair.fd[0], F_GETFD) == -1);
    CHECK(errno == EBADF);
}

TEST_CASE("stop hooks run once, at the first stop, before parked connections close", "[loop]") {
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open() == 0);
    Pair pair;
    const std::uint16_t handler =
        loop.add_handler([](int) -> std::int64_t { return yield_value(Op::want_read); });
    std::vector<std::string> ran;
    std::int64_t grace_left = -1;
    bool parked_open_in_hook = false;
    CHECK(loop.stop_grace_left() == std::chrono::milliseconds::max()); // not stopping
    const std::uint64_t first = loop.add_stop_hook([&] {
        ran.push_back("first");
        grace_left = loop.stop_grace_left().count();
        parked_open_in_hook = fcntl(pair.fd[0], F_GETFD) != -1;
    });
    const std::uint64_t removed = loop.add_stop_hook([&] { ran.push_back("removed"); });
    loop.add_stop_hook([&] { ran.push_back("third"); });
    CHECK(first != removed);
    loop.remove_stop_hook(removed);
    loop.post([&] { loop.adopt(pair.fd[0], handler); }); // parks at once
    loop.spawn([&] {
        weft::io::sleep(20);
        loop.stop(3s);
        loop.stop(1s); // a second stop runs no hook
    });
    loop.run();
    CHECK(ran == std::vector<std::string>{"first", "third"});
    CHECK(grace_left > 2'000);
    CHECK(grace_left <= 3'000);
    CHECK(parked_open_in_hook);
    CHECK(fcntl(pair.fd[0], F_GETFD) == -1); // closed by the stop, after the hooks
}
