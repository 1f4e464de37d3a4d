// The pub/sub demo Lwan's chat sample cannot do without polling: each
// subscriber's coroutine awaits its socket and a broadcast channel at once;
// a message published on one loop reaches every subscriber on every loop.

#include "event/broadcast.hpp"
#include "event/poll_event.hpp"
#include "event/waker.hpp"
#include "loop/io.hpp"
#include "loop/loop_group.hpp"
#include "net_helpers.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using weft::Loop;

namespace {

// Runs fn on `loop`'s thread and returns its value.
template <class F>
auto on_loop(Loop& loop, F fn) {
    std::promise<decltype(fn())> result;
    loop.post([&] { result.set_value(fn()); });
    return result.get_future().get();
}

} // namespace

TEST_CASE("a published message reaches every subscriber on every loop, with no polling",
          "[event]") {
    constexpr int kSubscribers = 16;
    weft::LoopGroup group({.threads = 2});
    std::string error;
    REQUIRE(group.open(error) == 0);
    weft::Broadcast<std::string> room;
    std::atomic<int> per_loop[2] = {0, 0};

    REQUIRE(group.listen(
                *weft::Address::parse("127.0.0.1:0", error),
                [&](int fd) -> std::int64_t {
                    Loop& loop = *Loop::current();
                    weft::Broadcast<std::string>::Subscriber me(room, loop);
                    weft::PollProxy socket(loop, fd);
                    ++per_loop[loop.index()];
                    weft::io::write(fd, "ready\n", 6);
                    char buffer[256];
                    for (;;) {
                        const ssize_t n = read(fd, buffer, sizeof buffer);
                        if (n > 0) {
                            room.publish(std::string(buffer, static_cast<std::size_t>(n)));
                            continue;
                        }
                        if (n == 0 || errno != EAGAIN) return 0;
                        weft::PollEvent readable(socket, weft::kReadable);
                        const weft::AwaitResult r = weft::await_any({&readable, &me.readable()});
                        if (r.index != 1) continue; // the socket: read it
                        std::string message;
                        while (me.channel().try_receive(message))
                            weft::io::write(fd, message.data(), message.size());
                    }
                },
                error) == 0);
    const std::uint16_t port = group.listening_on()[0].port();
    std::thread server([&] { group.run(); });

    std::vector<int> clients;
    for (int i = 0; i < kSubscribers; ++i) {
        clients.push_back(test::connect_tcp(port));
        REQUIRE(clients.back() >= 0);
        test::set_receive_timeout(clients.back(), 5000);
        REQUIRE(test::recv_exactly(clients.back(), 6) == "ready\n");
    }
    CHECK(per_loop[0] > 0);
    CHECK(per_loop[1] > 0);

    // Everyone waits now. Timers armed from here on would mean polling.
    const std::uint64_t arms_before =
        on_loop(group.loop(0), [&] { return group.loop(0).timers().arms(); }) +
        on_loop(group.loop(1), [&] { return group.loop(1).timers().arms(); });
    std::this_thread::sleep_for(50ms);

    const auto sent = std::chrono::steady_clock::now();
    REQUIRE(test::send_all(clients[3], "hello, room\n"));
    int delivered = 0;
    for (int fd : clients) delivered += test::recv_exactly(fd, 12) == "hello, room\n";
    const auto latency = std::chrono::steady_clock::now() - sent;
    std::printf("pub/sub: %d subscribers on 2 loops got the message in %.0f us\n", delivered,
                std::chrono::duration<double, std::micro>(latency).count());

    const std::uint64_t arms_after =
        on_loop(group.loop(0), [&] { return group.loop(0).timers().arms(); }) +
        on_loop(group.loop(1), [&] { return group.loop(1).timers().arms(); });
    for (int fd : clients) close(fd);
    group.stop();
    server.join();
    CHECK(delivered == kSubscribers);
    CHECK(arms_after == arms_before);
}
