// The loop with real sockets on loopback: the yield protocol, parking,
// timeouts, awaits on foreign fds, timers, cross-thread posts, stopping.
//
// Catch2 assertions are not thread-safe: code on the loop thread records what
// it sees, and the test thread checks it after the loop has stopped.

#include "loop/io.hpp"
#include "loop/listener.hpp"
#include "loop/loop.hpp"
#include "net_helpers.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>

#include <array>
#include <atomic>
#include <csignal>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using weft::Loop;
using weft::Op;
using weft::yield_value;

namespace {

// A loop on its own thread, listening on 127.0.0.1 at a free port.
struct TestServer {
    weft::FdTable table{};
    Loop loop{table};
    std::uint16_t port = 0;
    std::thread thread;

    explicit TestServer(Loop::Handler handler) {
        std::signal(SIGPIPE, SIG_IGN);
        REQUIRE(loop.open() == 0);
        std::string error;
        auto address = weft::Address::parse("127.0.0.1:0", error);
        const int fd = weft::open_listener(*address, error);
        INFO(error);
        REQUIRE(fd >= 0);
        port = weft::Address::of_socket(fd)->port();
        REQUIRE(loop.add_listener(fd, loop.add_handler(std::move(handler)), false) == 0);
    }
    void start() {
        thread = std::thread([this] { loop.run(); });
    }
    // Runs fn on the loop thread and waits for it.
    template <class F>
    void on_loop(F fn) {
        std::promise<void> done;
        loop.post([&] {
            fn();
            done.set_value();
        });
        done.get_future().wait();
    }
    void stop(std::chrono::milliseconds grace = 0ms) {
        if (!thread.joinable()) return;
        loop.post([this, grace] { loop.stop(grace); });
        thread.join();
    }
    ~TestServer() { stop(); }
};

// Echoes until the peer closes.
std::int64_t echo(int fd) {
    char buffer[4096];
    for (;;) {
        const ssize_t n = weft::io::read(fd, buffer, sizeof buffer);
        if (n <= 0) return n == 0 ? 0 : yield_value(Op::abort);
        if (weft::io::write(fd, buffer, static_cast<std::size_t>(n)) < 0)
            return yield_value(Op::abort);
    }
}

} // namespace

TEST_CASE("1,000 concurrent clients each doing 100 round trips get their bytes back", "[loop]") {
    TestServer server(echo);
    server.start();

    constexpr int kClients = 1000;
    constexpr int kRounds = 100;
    struct Client {
        int fd = -1;
        int round = 0;
        std::string sent;
        std::string got;
    };
    std::vector<Client> clients(kClients);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    std::mt19937 rng(1);
    auto next_message = [&](Client& c, int id) {
        c.sent.assign(1 + rng() % 3000, '\0');
        for (std::size_t i = 0; i < c.sent.size(); ++i)
            c.sent[i] = static_cast<char>('a' + (id + c.round + i) % 26);
        c.got.clear();
        REQUIRE(test::send_all(c.fd, c.sent));
    };
    for (int id = 0; id < kClients; ++id) {
        Client& c = clients[id];
        c.fd = test::connect_tcp(server.port);
        REQUIRE(c.fd >= 0);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u32 = static_cast<std::uint32_t>(id);
        REQUIRE(epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) == 0);
        next_message(c, id);
    }
    int done = 0;
    int wrong = 0;
    std::array<epoll_event, 128> events;
    while (done < kClients) {
        const int n = epoll_wait(ep, events.data(), events.size(), 10'000);
        REQUIRE(n > 0); // 10 s without progress: the server is stuck
        for (int i = 0; i < n; ++i) {
            const int id = static_cast<int>(events[i].data.u32);
            Client& c = clients[id];
            char buffer[4096];
            const ssize_t r = recv(c.fd, buffer, sizeof buffer, 0);
            REQUIRE(r > 0);
            c.got.append(buffer, static_cast<std::size_t>(r));
            if (c.got.size() < c.sent.size()) continue;
            wrong += c.got != c.sent;
            if (++c.round == kRounds) {
                epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
                close(c.fd);
                ++done;
            } else {
                next_message(c, id);
            }
        }
    }
    close(ep);
    CHECK(wrong == 0);
    server.stop(1000ms);
    CHECK(server.loop.live_tasks() == 0);
    CHECK(server.loop.stats().accepted == kClients);
}

TEST_CASE("accepted sockets have TCP_NODELAY", "[loop]") {
    std::atomic<int> nodelay{-1};
    TestServer server([&](int fd) -> std::int64_t {
        int on = 0;
        socklen_t len = sizeof on;
        getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &len);
        nodelay = on;
        return 0;
    });
    server.start();
    const int fd = test::connect_tcp(server.port);
    test::recv_to_end(fd);
    close(fd);
    server.stop();
    CHECK(nodelay == 1);
}

TEST_CASE("an accepted connection's two ends are noted beside its entry", "[loop]") {
    std::promise<std::pair<sockaddr_in, sockaddr_in>> noted;
    TestServer server([&](int fd) -> std::int64_t {
        // Noted at accept (epoll), or asked of the socket on first use (the
        // ring's multishot accept gives no address): the same ends.
        const weft::SocketEnds& ends = *weft::io::socket_ends(fd);
        REQUIRE(ends.known);
        noted.set_value({reinterpret_cast<const sockaddr_in&>(ends.peer),
                         reinterpret_cast<const sockaddr_in&>(ends.local)});
        return 0;
    });
    server.start();
    const int fd = test::connect_tcp(server.port);
    test::recv_to_end(fd);
    sockaddr_in mine{};
    socklen_t length = sizeof mine;
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &length) == 0);
    close(fd);
    server.stop();
    const auto [peer, local] = noted.get_future().get();
    CHECK(peer.sin_family == AF_INET);
    CHECK(peer.sin_port == mine.sin_port); // the client's end, as accept4 gave it
    CHECK(peer.sin_addr.s_addr == mine.sin_addr.s_addr);
    CHECK(local.sin_family == AF_INET);
    CHECK(ntohs(local.sin_port) == server.port); // the listener's address
    CHECK(local.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
}

TEST_CASE("a half-closed client still gets its reply, then EOF", "[loop]") {
    TestServer server(echo);
    server.start();
    const int fd = test::connect_tcp(server.port);
    REQUIRE(test::send_all(fd, "hello, then nothing more"));
    REQUIRE(shutdown(fd, SHUT_WR) == 0);
    CHECK(test::recv_to_end(fd) == "hello, then nothing more");
    close(fd);
    server.stop(1000ms);
    CHECK(server.loop.live_tasks() == 0);
}

TEST_CASE("a reset while the coroutine waits wakes it with the error", "[loop]") {
    std::atomic<std::int64_t> seen{1};
    TestServer server([&](int fd) -> std::int64_t {
        char buffer[16];
        seen = weft::io::read(fd, buffer, sizeof buffer);
        return 0;
    });
    server.start();
    const int fd = test::connect_tcp(server.port);
    std::this_thread::sleep_for(50ms); // let the coroutine wait
    linger hard{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    close(fd); // RST
    for (int i = 0; i < 200 && seen == 1; ++i) std::this_thread::sleep_for(10ms);
    CHECK(seen == -ECONNRESET);

    // And the loop goes on serving.
    server.stop(0ms);
    CHECK(server.loop.live_tasks() == 0);
}

TEST_CASE("a coroutine awaiting a pipe wakes when the other end writes", "[loop]") {
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open() == 0);
    int pipe_fds[2];
    REQUIRE(pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) == 0);
    std::string got;
    std::int64_t woken = 0;
    loop.spawn([&] {
        char buffer[64];
        // The raw protocol first: AWAIT_READ on the pipe, by hand.
        woken = weft::yield(yield_value(Op::await_read, pipe_fds[0]));
        const ssize_t n = weft::io::read(pipe_fds[0], buffer, sizeof buffer);
        if (n > 0) got.assign(buffer, static_cast<std::size_t>(n));
        // Then through io::read, which waits the same way.
        const ssize_t m = weft::io::read(pipe_fds[0], buffer, sizeof buffer);
        if (m > 0) got.append(buffer, static_cast<std::size_t>(m));
        Loop::current()->stop(0ms);
    });
    std::thread writer([&] {
        std::this_thread::sleep_for(50ms);
        REQUIRE(write(pipe_fds[1], "ping", 4) == 4);
        std::this_thread::sleep_for(50ms);
        REQUIRE(write(pipe_fds[1], "pong", 4) == 4);
    });
    loop.run();
    writer.join();
    CHECK(woken == weft::kReadable);
    CHECK(got == "pingpong");
    // The awaited fd was released when the coroutine ended.
    CHECK(table[pipe_fds[0]].kind == weft::FdKind::free);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

TEST_CASE("a second coroutine awaiting the same fd gets EBUSY", "[loop]") {
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open() == 0);
    int pipe_fds[2];
    REQUIRE(pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) == 0);
    std::int64_t first = 0, second = 0;
    loop.spawn([&] { first = weft::yield(yield_value(Op::await_read, pipe_fds[0])); });
    loop.spawn([&] {
        second = weft::yield(yield_value(Op::await_read, pipe_fds[0]));
        REQUIRE(write(pipe_fds[1], "x", 1) == 1);
        weft::io::sleep(20);
        Loop::current()->stop(0ms);
    });
    loop.run();
    CHECK(second == -EBUSY);
    CHECK(first == weft::kReadable);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

TEST_CASE("waiting again on the registered interest costs no epoll_ctl", "[loop]") {
    struct Counts {
        std::uint64_t after_first_read = 0, after_reads = 0, after_write_wait = 0,
                      after_more_reads = 0;
        bool write_waited = false;
    } counts;
    std::atomic<bool> done{false};
    std::atomic<bool> filled{false};
    TestServer server([&](int fd) -> std::int64_t {
        Loop& loop = *Loop::current();
        char buffer[64];
        // The first wait registers the read interest (whether or not a byte
        // is already there: a slow machine may have it); every read after
        // it, waiting or not, costs no epoll_ctl.
        weft::io::wait(fd, weft::kReadable);
        weft::io::read(fd, buffer, 1);
        counts.after_first_read = loop.stats().epoll_ctl;
        for (int i = 0; i < 10; ++i) weft::io::read(fd, buffer, 1);
        counts.after_reads = loop.stats().epoll_ctl;
        // Fill the socket until a write must wait: the interest grows once.
        std::string big(1 << 20, 'x');
        int fill = 0;
        while (send(fd, big.data(), big.size(), MSG_DONTWAIT) > 0) ++fill;
        counts.write_waited = errno == EAGAIN;
        filled = true;
        weft::io::write(fd, "!", 1);
        counts.after_write_wait = loop.stats().epoll_ctl;
        for (int i = 0; i < 10; ++i) weft::io::read(fd, buffer, 1);
        counts.after_more_reads = loop.stats().epoll_ctl;
        done = true;
        return 0;
    });
    server.start();
    const int fd = test::connect_tcp(server.port);
    for (int i = 0; i < 11; ++i) {
        std::this_thread::sleep_for(5ms);
        REQUIRE(test::send_all(fd, "r"));
    }
    // Drain what the server filled, so its write can finish: once it is
    // full, and well after, so that the write finds it full and waits (a
    // drain begun sooner, as under qemu, let it through at once).
    std::thread drain([fd, &filled] {
        for (int i = 0; i < 500 && !filled; ++i) std::this_thread::sleep_for(10ms);
        std::this_thread::sleep_for(100ms);
        test::recv_to_end(fd);
    });
    std::this_thread::sleep_for(50ms);
    for (int i = 0; i < 10; ++i) {
        std::this_thread::sleep_for(5ms);
        test::send_all(fd, "r");
    }
    for (int i = 0; i < 500 && !done; ++i) std::this_thread::sleep_for(10ms);
    shutdown(fd, SHUT_RDWR);
    drain.join();
    close(fd);
    server.stop();
    REQUIRE(done);
    CHECK(counts.write_waited);
    CHECK(counts.after_reads == counts.after_first_read);      // unchanged: no call
    CHECK(counts.after_write_wait == counts.after_reads + 1);  // grown: one call
    CHECK(counts.after_more_reads == counts.after_write_wait); // within it: none
}

TEST_CASE("a parked connection holds no coroutine and gets one when bytes arrive", "[loop]") {
    // Serves one message per coroutine, then parks.
    TestServer server([](int fd) -> std::int64_t {
        char buffer[256];
        const ssize_t n = weft::io::read(fd, buffer, sizeof buffer);
        if (n <= 0) return 0;
        weft::io::write(fd, buffer, static_cast<std::size_t>(n));
        return yield_value(Op::want_read);
    });
    server.start();
    const int fd = test::connect_tcp(server.port);
    std::vector<std::size_t> live_while_idle;
    for (int i = 0; i < 5; ++i) {
        const std::string message = "message " + std::to_string(i);
        REQUIRE(test::send_all(fd, message));
        CHECK(test::recv_exactly(fd, message.size()) == message);
        std::this_thread::sleep_for(10ms);
        server.on_loop([&] { live_while_idle.push_back(server.loop.live_tasks()); });
    }
    std::uint64_t started = 0;
    server.on_loop([&] { started = server.loop.stats().tasks_started; });
    close(fd); // the EOF starts one more, which reads it and ends
    server.stop(1000ms);
    CHECK(live_while_idle == std::vector<std::size_t>(5, 0));
    CHECK(started == 5);
}

TEST_CASE("a connection's timeout wakes its waiting coroutine, or closes it when parked",
          "[loop]") {
    std::atomic<std::int64_t> read_result{1};
    TestServer server([&](int fd) -> std::int64_t {
        Loop::current()->set_timeout(fd, 50);
        char buffer[16];
        const ssize_t n = weft::io::read(fd, buffer, sizeof buffer);
        if (read_result == 1) {
            read_result = n;
            return 0;
        }
        // Second connection: park with a keep-alive timeout.
        Loop::current()->set_timeout(fd, 50);
        return yield_value(Op::want_read);
    });
    server.start();
    const int a = test::connect_tcp(server.port);
    test::set_receive_timeout(a, 5000);
    CHECK(test::recv_to_end(a).empty()); // closed by the server
    CHECK(read_result == -ETIMEDOUT);
    close(a);

    const int b = test::connect_tcp(server.port);
    test::set_receive_timeout(b, 5000);
    REQUIRE(test::send_all(b, "x"));
    char c;
    CHECK(recv(b, &c, 1, 0) == 0); // parked, then closed by its timeout
    close(b);
    server.stop();
}

TEST_CASE("a cleared timeout never ends a later wait, nor closes the connection parked after it",
          "[loop]") {
    // clear_timeout leaves the fd's timer armed but off (Task::timer_on):
    // its old deadline must pass without effect, whether the task then
    // waits without a timeout or parks without one.
    std::atomic<std::int64_t> read_result{1};
    std::atomic<int> coroutines{0};
    TestServer server([&](int fd) -> std::int64_t {
        Loop& loop = *Loop::current();
        if (coroutines++ > 0) {
            char buffer[16];
            return weft::io::read(fd, buffer, sizeof buffer) > 0 ? yield_value(Op::want_read) : 0;
        }
        loop.set_timeout(fd, 30);
        loop.clear_timeout(fd);
        char buffer[16];
        read_result = weft::io::read(fd, buffer, sizeof buffer); // bytes come after 100 ms
        loop.set_timeout(fd, 30);
        loop.clear_timeout(fd);
        return yield_value(Op::want_read); // parked with no timeout
    });
    server.start();
    const int fd = test::connect_tcp(server.port);
    std::this_thread::sleep_for(100ms);
    REQUIRE(test::send_all(fd, "x"));
    std::this_thread::sleep_for(100ms);
    // Still open: bytes start its next coroutine, which reads them.
    REQUIRE(test::send_all(fd, "y"));
    std::this_thread::sleep_for(50ms);
    int live_coroutines = 0;
    server.on_loop([&] { live_coroutines = coroutines; });
    close(fd);
    server.stop(1000ms);
    CHECK(read_result == 1);
    CHECK(live_coroutines == 2);
}

TEST_CASE("sleeping coroutines wake in deadline order, never early", "[loop]") {
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open() == 0);
    std::vector<std::pair<int, std::uint64_t>> woke; // (ms asked, ms slept)
    for (int ms : {50, 10, 30, 20, 40, 0}) {
        loop.spawn([&, ms] {
            const std::uint64_t start = Loop::current()->now();
            const std::int64_t r = weft::io::sleep(static_cast<std::uint32_t>(ms));
            if (r == 0) woke.emplace_back(ms, Loop::current()->now() - start);
            if (woke.size() == 6) Loop::current()->stop(0ms);
        });
    }
    loop.run();
    REQUIRE(woke.size() == 6);
    for (std::size_t i = 0; i < woke.size(); ++i) {
        if (i > 0) CHECK(woke[i - 1].first <= woke[i].first);
        CHECK(woke[i].second >= static_cast<std::uint64_t>(woke[i].first));
    }
}

TEST_CASE("calls posted from other threads run exactly once each", "[loop]") {
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open() == 0);
    constexpr int kThreads = 4;
    constexpr int kPosts = 20'000;
    std::vector<int> runs(kThreads * kPosts, 0);
    std::atomic<int> total{0};
    std::thread runner([&] { loop.run(); });
    std::vector<std::thread> posters;
    for (int t = 0; t < kThreads; ++t) {
        posters.emplace_back([&, t] {
            for (int i = 0; i < kPosts; ++i) {
                const int id = t * kPosts + i;
                loop.post([&, id] {
                    ++runs[id]; // on the loop thread only
                    ++total;
                });
            }
        });
    }
    for (auto& p : posters) p.join();
    loop.post([&] { loop.stop(0ms); });
    runner.join();
    CHECK(total == kThreads * kPosts);
    CHECK(std::count(runs.begin(), runs.end(), 1) == kThreads * kPosts);
}

TEST_CASE("stopping lets running coroutines finish, and unwinds those past the grace", "[loop]") {
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open() == 0);
    bool short_done = false;
    bool long_done = false;
    bool long_unwound = false;
    loop.spawn([&] {
        weft::io::sleep(30);
        short_done = true;
    });
    loop.spawn([&] {
        struct Unwound {
            bool* flag;
            ~Unwound() { *flag = true; }
        } guard{&long_unwound};
        weft::io::sleep(60'000);
        long_done = true;
    });
    loop.spawn([&] { Loop::current()->stop(200ms); });
    loop.run();
    CHECK(short_done);
    CHECK_FALSE(long_done);
    CHECK(long_unwound);
    CHECK(loop.live_tasks() == 0);
}

TEST_CASE("an awaited fd closed with io::close can be reopened and awaited again", "[loop]") {
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open() == 0);
    int first[2], second[2];
    REQUIRE(pipe2(first, O_NONBLOCK | O_CLOEXEC) == 0);
    const int number = first[0];
    std::string got;
    int reused_number = -1;
    loop.spawn([&] {
        char c;
        REQUIRE(write(first[1], "a", 1) == 1);
        weft::io::read(first[0], &c, 1); // registers the fd with the loop
        got += c;
        weft::io::close(first[0]);
        close(first[1]);
        REQUIRE(pipe2(second, O_NONBLOCK | O_CLOEXEC) == 0);
        reused_number = second[0]; // the kernel hands out the lowest free number
        std::thread writer([&] {
            std::this_thread::sleep_for(30ms);
            REQUIRE(write(second[1], "b", 1) == 1);
        });
        const ssize_t n = weft::io::read(second[0], &c, 1); // must register anew
        writer.join();
        if (n == 1) got += c;
        weft::io::close(second[0]);
        close(second[1]);
        Loop::current()->stop(0ms);
    });
    loop.run();
    CHECK(reused_number == number);
    CHECK(got == "ab");
}

TEST_CASE("a timeout that fires while its coroutine runs ends its next wait", "[loop]") {
    std::atomic<std::int64_t> result{1};
    TestServer server([&](int fd) -> std::int64_t {
        Loop& loop = *Loop::current();
        loop.set_timeout(fd, 30);
        // Busy for 60 ms without waiting (only yielding): the timeout fires
        // meanwhile and must not be lost.
        const std::uint64_t start = loop.now();
        while (loop.now() - start < 60) weft::yield(yield_value(Op::yield));
        char c;
        result = weft::io::read(fd, &c, 1);
        return 0;
    });
    server.start();
    const int fd = test::connect_tcp(server.port);
    test::set_receive_timeout(fd, 5000);
    test::recv_to_end(fd);
    close(fd);
    server.stop();
    CHECK(result == -ETIMEDOUT);
}

TEST_CASE("a connection's parked state comes back with its next coroutine, on bytes, its "
          "timeout or the stop, and is released when the loop closes the connection",
          "[loop]") {
    // Each coroutine takes what the last one left, reads a byte, and parks
    // again with a state of its own ("b": one that times out soon); "x" ends
    // the connection.
    struct Counted : weft::ParkedState {
        std::atomic<int>* released;
        std::uint64_t deadline;
    };
    std::atomic<int> released{0}, taken{0}, timed_out{0}, at_stop{0};
    TestServer server([&](int fd) -> std::int64_t {
        Loop& loop = *Loop::current();
        weft::ParkedState* state = loop.take_parked(fd);
        if (state) {
            ++taken;
            if (loop.now() >= static_cast<Counted*>(state)->deadline) ++timed_out;
            if (loop.stopping()) ++at_stop;
            state->release(state);
        }
        char c = 0;
        const ssize_t n = recv(fd, &c, 1, 0);
        if (n == 0 || c == 'x') return yield_value(Op::abort);
        if (n < 0 && !state) return yield_value(Op::want_read); // accepted before its byte
        const std::uint32_t ms = c == 'b' ? 100 : 60'000;
        auto* left = new Counted;
        left->released = &released;
        left->deadline = loop.now() + ms;
        left->release = [](weft::ParkedState* self) {
            auto* counted = static_cast<Counted*>(self);
            ++*counted->released;
            delete counted;
        };
        loop.set_timeout(fd, ms);
        loop.leave_parked(fd, left);
        return yield_value(Op::want_read);
    });
    server.start();
    const int fd = test::connect_tcp(server.port);
    REQUIRE(test::send_all(fd, "a"));
    std::this_thread::sleep_for(20ms);
    REQUIRE(test::send_all(fd, "b"));   // takes a's state
    std::this_thread::sleep_for(300ms); // b's times out: taken, and another left
    REQUIRE(test::send_all(fd, "x"));   // takes that one, and closes
    test::set_receive_timeout(fd, 5000);
    CHECK(test::recv_to_end(fd).empty());
    close(fd);

    // Reset while parked with a state: the loop closes it and releases it.
    const int reset = test::connect_tcp(server.port);
    REQUIRE(test::send_all(reset, "a"));
    std::this_thread::sleep_for(50ms);
    const linger abort_on_close{1, 0};
    setsockopt(reset, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
    close(reset);
    std::this_thread::sleep_for(100ms);
    int released_then = 0;
    server.on_loop([&] { released_then = released; });

    // Parked with a state when the loop stops: given a coroutine, which
    // takes it, finds nothing to read and leaves another, which the
    // stopping loop releases as it closes the connection.
    const int stopped = test::connect_tcp(server.port);
    REQUIRE(test::send_all(stopped, "a"));
    std::this_thread::sleep_for(50ms);
    server.stop(1000ms);
    close(stopped);
    CHECK(released_then == 3 + 1); // conn 1's by its coroutines, the reset one's by the loop
    CHECK(taken == 4);             // a's by b, b's by its timeout, the timeout's by x, at the stop
    CHECK(timed_out == 1);
    CHECK(at_stop == 1);
    CHECK(released == 6);
}
