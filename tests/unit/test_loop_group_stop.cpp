// How a loop group stops: drain_delay before the graceful stop, SIGQUIT at
// once.

#include "loop/io.hpp"
#include "loop/loop_group.hpp"
#include "net_helpers.hpp"
#include "signals_blocked.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <thread>

using namespace std::chrono_literals;
using weft::Loop;
using weft::LoopGroup;

namespace {

weft::Address loopback() {
    std::string error;
    auto a = weft::Address::parse("127.0.0.1:0", error);
    REQUIRE(a);
    return *a;
}

// Answers one message with whether its loop closes connections now.
std::int64_t say_closing(int fd) {
    char buffer[64];
    if (weft::io::read(fd, buffer, sizeof buffer) <= 0) return 0;
    const bool closing = Loop::current()->closing_connections();
    weft::io::write(fd, closing ? "closing" : "keeping", 7);
    return 0;
}

std::string ask(std::uint16_t port) {
    const int fd = test::connect_tcp(port);
    if (fd < 0) return "refused";
    test::send_all(fd, "?");
    std::string reply = test::recv_to_end(fd);
    close(fd);
    return reply;
}

} // namespace

TEST_CASE("drain_delay: after SIGTERM the loops accept and answer, closing, then stop", "[loop]") {
    SignalsBlocked blocked;
    LoopGroup group({.threads = 2, .grace = 5000ms, .drain_delay = 600ms});
    std::string error;
    REQUIRE(group.open(error) == 0);
    REQUIRE(group.listen(loopback(), say_closing, error) == 0);
    const std::uint16_t port = group.listening_on()[0].port();
    std::atomic<bool> stopping{false};
    group.on_stopping([&] { stopping = true; });

    std::string before, during;
    bool stopping_when_asked = false;
    std::thread client([&] {
        before = ask(port);
        kill(getpid(), SIGTERM);
        while (!stopping) std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(200ms); // within the delay
        stopping_when_asked = stopping;
        during = ask(port);
    });
    group.run();
    client.join();
    CHECK(before == "keeping");
    CHECK(stopping_when_asked);
    CHECK(during == "closing");
    CHECK(ask(port) == "refused");
}

TEST_CASE("SIGQUIT stops at once, cutting a running task", "[loop]") {
    SignalsBlocked blocked;
    LoopGroup group({.threads = 2, .grace = 20'000ms});
    std::string error;
    REQUIRE(group.open(error) == 0);
    std::atomic<bool> finished{false};
    REQUIRE(group.listen(
                loopback(),
                [&](int fd) -> std::int64_t {
                    char buffer[64];
                    if (weft::io::read(fd, buffer, sizeof buffer) <= 0) return 0;
                    weft::io::sleep(10'000); // still running at SIGQUIT
                    finished = true;
                    return 0;
                },
                error) == 0);
    const std::uint16_t port = group.listening_on()[0].port();
    std::atomic<bool> stopping{false};
    group.on_stopping([&] { stopping = true; });

    std::string reply = "unset";
    std::thread client([&] {
        const int fd = test::connect_tcp(port);
        test::send_all(fd, "request");
        std::this_thread::sleep_for(100ms);
        kill(getpid(), SIGQUIT);
        reply = test::recv_to_end(fd);
        close(fd);
    });
    const auto start = std::chrono::steady_clock::now();
    group.run();
    client.join();
    CHECK(reply.empty());
    CHECK(!finished);
    CHECK(stopping);
    // Far from the 10 s the task sleeps, or the 20 s grace.
    CHECK(std::chrono::steady_clock::now() - start < 5s);
}
