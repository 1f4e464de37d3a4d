// An upstream's connections while a loop group stops: a loop that has ended
// its last request may still be handed work by the others (issue 7).

#include "fastcgi/client_watch.hpp"
#include "fastcgi/upstream.hpp"
#include "loop/io.hpp"
#include "loop/loop_group.hpp"
#include "signals_blocked.hpp"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>

using namespace std::chrono_literals;
using weft::LoopGroup;
using weft::PollProxy;
using weft::fastcgi::AcquireError;
using weft::fastcgi::Backend;
using weft::fastcgi::ClientWatch;
using weft::fastcgi::Upstream;

namespace {

// A server that never accepts: its backlog completes the connects, which is
// all the pool needs here (no request is sent).
struct Backlog {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    weft::Address address;
    Backlog() {
        sockaddr_in in{};
        in.sin_family = AF_INET;
        in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&in), sizeof in) == 0);
        REQUIRE(::listen(fd, 16) == 0);
        address = *weft::Address::of_socket(fd);
    }
    ~Backlog() { ::close(fd); }
};

// What a request's acquire needs besides the pool: a client to watch, here
// one end of a socket pair that stays quiet.
struct QuietClient {
    int fds[2] = {-1, -1};
    QuietClient() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0); }
    ~QuietClient() {
        ::close(fds[0]);
        ::close(fds[1]);
    }
};

// One idle connection kept, for good (no keepalive_timeout).
weft::fastcgi::UpstreamOptions pool_options(const Backlog& server, unsigned max_conns) {
    return {.name = "test",
            .servers = {server.address},
            .keepalive = 1,
            .max_conns = max_conns,
            .queue_timeout_ms = 3'000,
            .keepalive_timeout_ms = 0};
}

// A group of two loops sharing `upstream`: loop 0 takes a connection, keeps
// it idle and stops the group; with nothing left to run it ends at once.
// Loop 1 still serves a request, which runs `then` after loop 0 has ended,
// with a client to watch.
template <class Then>
void after_loop_0_ends(Upstream& upstream, Then then) {
    LoopGroup group({.threads = 2, .grace = 20'000ms});
    std::string error;
    REQUIRE(group.open(error) == 0);
    QuietClient first;
    std::atomic<bool> kept{false};
    group.loop(0).spawn([&] {
        PollProxy client(*weft::Loop::current(), first.fds[0]);
        ClientWatch watch(client);
        AcquireError why = AcquireError::none;
        Backend* backend = upstream.acquire(watch, why);
        REQUIRE(backend);
        upstream.release(backend, true);
        kept = true;
        group.stop();
    });
    QuietClient second;
    group.loop(1).spawn([&] {
        while (!kept) weft::io::sleep(10);
        weft::io::sleep(300); // loop 0 ends meanwhile
        PollProxy client(*weft::Loop::current(), second.fds[0]);
        ClientWatch watch(client);
        then(watch);
    });
    group.run();
}

} // namespace

TEST_CASE("upstream: a connection kept on a loop that has ended goes to a waiter on another",
          "[fastcgi]") {
    SignalsBlocked blocked;
    Backlog server;
    Upstream upstream(pool_options(server, 1));
    // The pool's one connection is idle on loop 0: handed over, or none
    // frees up until queue_timeout.
    AcquireError error = AcquireError::none;
    bool got = false;
    after_loop_0_ends(upstream, [&](ClientWatch& watch) {
        Backend* backend = upstream.acquire(watch, error);
        got = backend != nullptr;
        if (backend) upstream.release(backend, false);
    });
    CHECK(got);
    CHECK(error == AcquireError::none);
    CHECK(upstream.counts().open == 0);
}

TEST_CASE("upstream: a stall closes a connection kept on a loop that has ended", "[fastcgi]") {
    SignalsBlocked blocked;
    Backlog server;
    Upstream upstream(pool_options(server, 2));
    // A new connection on loop 1 that never answers stalls (it may sit in
    // the backlog behind the child the idle one holds): the idle one is
    // closed, on loop 0, within a few of its ticks.
    unsigned open_while_stalled = 0;
    after_loop_0_ends(upstream, [&](ClientWatch& watch) {
        AcquireError why = AcquireError::none;
        Backend* backend = upstream.acquire(watch, why);
        REQUIRE(backend);
        for (int i = 0; i < 100 && upstream.counts().open > 1; ++i) weft::io::sleep(20);
        open_while_stalled = upstream.counts().open;
        upstream.release(backend, false);
    });
    CHECK(open_while_stalled == 1);
    CHECK(upstream.counts().open == 0);
}
