// A keep-alive connection between requests, on a real loop over a socketpair:
// it waits warm on its coroutine while the loop lets it (Loop::begin_warm),
// and parks otherwise, under the same idle deadline either way.
//
// The client is a coroutine of the same loop, so the loop's clock and its
// warm bounds decide, not the machine's load. Catch2's assertions are not
// for coroutines: the client records, and the test checks after the loop ran.

#include "http/connection.hpp"
#include "http/exchange.hpp"
#include "http/router.hpp"
#include "http/server.hpp"
#include "loop/io.hpp"
#include "loop/io_backend.hpp"
#include "loop/loop.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using namespace weft::http;

namespace {

class Hello : public Handler {
public:
    Hello() : Handler("/") {}
    void serve(Exchange& exchange) const override { exchange.send("hello"); }
    std::string describe() const override { return "hello"; }
};

constexpr std::string_view kRequest = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

// A loop on epoll (warm waits are epoll's: Loop::begin_warm) serving a
// Server of Hello, and clients adopted from socketpairs.
struct Rig {
    struct {
        weft::FdTable table;
        weft::Loop loop{table};
        template <class F>
        void spawn(F&& body) {
            REQUIRE(loop.spawn(std::forward<F>(body)));
        }
    } t;
    Server server;
    std::uint16_t handler = 0;
    // As a reload sets it (ServerUse::OnLoop::replaced); coroutines started
    // after it serve "the new server", which is not replaced.
    bool replaced = false;
    bool not_replaced = false;

    explicit Rig(std::uint32_t keep_alive_ms = 60'000) {
        REQUIRE(t.loop.open(weft::IoBackend::epoll) == 0);
        server.options.keep_alive_timeout_ms = keep_alive_ms;
        Router::Site site;
        site.handlers.push_back(std::make_unique<Hello>());
        server.router.add_site(std::move(site));
        handler = t.loop.add_handler([this](int fd) {
            return serve_connection(fd, server, replaced ? &not_replaced : &replaced);
        });
    }
    // The client's end of a new connection the loop serves.
    int connect() {
        int fd[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) == 0);
        t.loop.post([this, server_end = fd[0]] { t.loop.adopt(server_end, handler); });
        return fd[1];
    }
    // In the client coroutine: sends a request and reads until its whole
    // answer came; whether it did.
    static bool ask(int fd) {
        weft::io::write(fd, kRequest.data(), kRequest.size());
        std::string got;
        char buffer[512];
        while (!got.ends_with("\r\n\r\nhello")) {
            const ssize_t n = weft::io::read(fd, buffer, sizeof buffer);
            if (n <= 0) return false;
            got.append(buffer, static_cast<std::size_t>(n));
        }
        return true;
    }
    // Runs `client` as a coroutine, then the loop until it stopped.
    template <class F>
    void run(F client) {
        t.spawn([this, client] {
            client();
            t.loop.stop(std::chrono::seconds(20));
        });
        t.loop.run(); // not stopping meanwhile: a stopping loop waits nothing warm
    }
    std::uint64_t started() const { return t.loop.stats().tasks_started; }
};

} // namespace

TEST_CASE("a connection's next request is served on the coroutine that waited warm for it",
          "[http][warm]") {
    Rig rig;
    rig.t.loop.set_warm_bounds(64, 60'000);
    std::vector<bool> answered;
    std::uint64_t started_between = 0;
    std::size_t live_between = 0;
    const int client = rig.connect();
    rig.run([&] {
        answered.push_back(Rig::ask(client));
        const std::uint64_t before = rig.started();
        for (int i = 0; i < 5; ++i) answered.push_back(Rig::ask(client));
        started_between = rig.started() - before;
        live_between = rig.t.loop.live_tasks();
        close(client);
    });
    CHECK(answered == std::vector<bool>(6, true));
    CHECK(started_between == 0); // no coroutine started for requests 2 to 6
    CHECK(live_between == 2);    // the client and the connection waiting warm
}

TEST_CASE("a warm wait cools after the loop's bound and parks, holding no coroutine",
          "[http][warm]") {
    Rig rig;
    rig.t.loop.set_warm_bounds(64, 20);
    bool first = false, second = false;
    std::size_t live_cooled = 99;
    std::uint64_t started_again = 0;
    const int client = rig.connect();
    rig.run([&] {
        first = Rig::ask(client);
        weft::io::sleep(200); // cooled after 20 ms
        live_cooled = rig.t.loop.live_tasks();
        const std::uint64_t before = rig.started();
        second = Rig::ask(client);
        started_again = rig.started() - before;
        close(client);
    });
    CHECK(first);
    CHECK(second);
    CHECK(live_cooled == 1); // the client alone: the connection parked
    CHECK(started_again == 1);
}

TEST_CASE("no more connections wait warm than the loop's limit, the others park", "[http][warm]") {
    Rig rig;
    rig.t.loop.set_warm_bounds(2, 60'000);
    std::vector<bool> answered;
    std::size_t live = 0;
    std::vector<int> clients;
    for (int i = 0; i < 5; ++i) clients.push_back(rig.connect());
    rig.run([&] {
        for (const int c : clients) answered.push_back(Rig::ask(c));
        live = rig.t.loop.live_tasks();
        for (const int c : clients) answered.push_back(Rig::ask(c)); // warm or parked
        for (const int c : clients) close(c);
    });
    CHECK(answered == std::vector<bool>(10, true));
    CHECK(live == 3); // the client and two warm waits
}

TEST_CASE("a warm wait ends at the keep-alive timeout, and empty lines do not push it back",
          "[http][warm]") {
    Rig rig(300);
    rig.t.loop.set_warm_bounds(64, 60'000);
    bool answered = false;
    std::uint64_t closed_after = 0;
    std::string after;
    const int client = rig.connect();
    rig.run([&] {
        answered = Rig::ask(client);
        const std::uint64_t idle_from = rig.t.loop.now();
        char buffer[64];
        ssize_t n = 0;
        // An empty line every 100 ms would hold it open forever if each
        // started a new idle timeout.
        for (int i = 0; i < 20; ++i) {
            weft::io::write(client, "\r\n", 2);
            weft::io::sleep(100);
            n = weft::io::recv_now(client, buffer, sizeof buffer);
            if (n == 0) break;
            if (n > 0) after.append(buffer, static_cast<std::size_t>(n));
        }
        if (n == 0) closed_after = rig.t.loop.now() - idle_from;
        close(client);
    });
    CHECK(answered);
    CHECK(after.empty());
    CHECK(closed_after >= 290); // the client may read the clock a millisecond after the server
    CHECK(closed_after < 1'000);
}

TEST_CASE("a stopping loop ends warm waits at once and closes their connections", "[http][warm]") {
    Rig rig;
    rig.t.loop.set_warm_bounds(64, 60'000);
    bool answered = false;
    ssize_t end = -1;
    std::uint64_t took = 99'999;
    const int client = rig.connect();
    rig.t.spawn([&] {
        answered = Rig::ask(client);
        const std::uint64_t from = rig.t.loop.now();
        rig.t.loop.stop(std::chrono::seconds(20));
        char buffer[64];
        end = weft::io::read(client, buffer, sizeof buffer);
        took = rig.t.loop.now() - from;
        close(client);
    });
    rig.t.loop.run();
    CHECK(answered);
    CHECK(end == 0);     // closed, not reset, not left open
    CHECK(took < 1'000); // not after the 20 s grace
}

TEST_CASE("empty lines do not earn another warm wait: the connection parks after them",
          "[http][warm]") {
    Rig rig;
    rig.t.loop.set_warm_bounds(64, 60'000);
    bool answered = false, again = false;
    std::size_t live_warm = 0, live_after_lines = 99;
    const int client = rig.connect();
    rig.run([&] {
        answered = Rig::ask(client);
        live_warm = rig.t.loop.live_tasks();
        weft::io::write(client, "\r\n", 2);
        weft::io::sleep(50);
        live_after_lines = rig.t.loop.live_tasks();
        again = Rig::ask(client);
        close(client);
    });
    CHECK(answered);
    CHECK(again);
    CHECK(live_warm == 2);        // the client, and the connection waiting warm
    CHECK(live_after_lines == 1); // parked after the empty line
}

TEST_CASE("empty lines that find the server replaced keep the keep-alive deadline",
          "[http][warm]") {
    // A reload moves a warm connection's next bytes to the new server (a
    // parked head); empty lines alone must not put it under a head's
    // request_timeout instead of its keep-alive timeout.
    Rig rig(300);
    rig.server.options.request_timeout_ms = 3'000;
    rig.t.loop.set_warm_bounds(64, 60'000);
    bool answered = false;
    ssize_t end = -1;
    std::uint64_t closed_after = 0;
    const int client = rig.connect();
    rig.run([&] {
        // Before the request: the server's idle deadline counts from its
        // answer, on the same loop's clock, so no earlier than this. (Read
        // after the answer, a loaded machine's late tick made it 14 ms
        // later than the server's.)
        const std::uint64_t asked_at = rig.t.loop.now();
        answered = Rig::ask(client);
        rig.replaced = true;
        weft::io::write(client, "\r\n", 2);
        char buffer[64];
        end = weft::io::read(client, buffer, sizeof buffer);
        closed_after = rig.t.loop.now() - asked_at;
        close(client);
    });
    CHECK(answered);
    CHECK(end == 0);
    CHECK(closed_after >= 300);
    CHECK(closed_after < 1'500);
}
