// Channel<T>: bounded, suspending, closable.

#include "event/channel.hpp"
#include "event_helpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using weft::Loop;

TEST_CASE("a channel delivers in order, send waits while full, receive while empty", "[event]") {
    test::EventLoop t;
    weft::Channel<int> channel(t.loop, 3);
    std::vector<int> received;
    std::vector<std::size_t> sizes_at_send;
    t.spawn([&] {
        for (int i = 0; i < 20; ++i) {
            sizes_at_send.push_back(channel.size());
            REQUIRE(channel.send(i) == 0);
        }
        channel.close();
    });
    t.spawn([&] {
        int v = 0;
        while (channel.receive(v) == 0) received.push_back(v);
    });
    t.run();
    std::vector<int> expected(20);
    for (int i = 0; i < 20; ++i) expected[i] = i;
    CHECK(received == expected);
    CHECK(*std::max_element(sizes_at_send.begin(), sizes_at_send.end()) <= 3);
}

TEST_CASE("closing a channel wakes every sender and receiver", "[event]") {
    test::EventLoop t;
    weft::Channel<std::string> full(t.loop, 1), empty(t.loop, 1);
    REQUIRE(full.try_send("occupied"));
    std::vector<int> results;
    for (int i = 0; i < 3; ++i) {
        t.spawn([&] { results.push_back(full.send("more")); });
        t.spawn([&] {
            std::string s;
            results.push_back(empty.receive(s));
        });
    }
    t.spawn([&] {
        full.close();
        empty.close();
    });
    t.run();
    CHECK(results == std::vector<int>(6, -EPIPE));
    // What was queued before the close is still received.
    std::string left;
    CHECK(full.try_receive(left));
    CHECK(left == "occupied");
    CHECK(full.send("x") == -EPIPE);
}

TEST_CASE("a receive with a timeout gives up", "[event]") {
    test::EventLoop t;
    weft::Channel<int> channel(t.loop, 1);
    int r = 0;
    t.spawn([&] {
        int v;
        r = channel.receive(v, 10);
    });
    t.run();
    CHECK(r == -ETIMEDOUT);
}

TEST_CASE("a send that had to wait delivers its value, not a moved-from one", "[event]") {
    test::EventLoop t;
    weft::Channel<std::string> channel(t.loop, 1);
    std::string a, b;
    t.spawn([&] {
        channel.send("first");
        channel.send(std::string(64, 'z')); // full: waits, then sends this
    });
    t.spawn([&] {
        channel.receive(a);
        channel.receive(b);
    });
    t.run();
    CHECK(a == "first");
    CHECK(b == std::string(64, 'z'));
}
