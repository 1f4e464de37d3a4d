// The table behind limit_conn and limit_rate: nginx's leaky bucket in
// milli-requests (refill, burst, delay, Retry-After), requests in progress
// counted and released, separate budgets per address and per limit, IPv6
// keyed by its /64, entries reused once idle, and a full table.

#include "util/limit_table.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace weft;
using Outcome = LimitTable::Outcome;

namespace {

constexpr std::uint64_t kStart = 1'000'000; // the loop's clock: ms since boot

IpAddress address(std::string_view text) {
    const std::optional<IpAddress> parsed = IpAddress::parse(text);
    INFO(text);
    REQUIRE(parsed);
    return *parsed;
}

RateLimit rate(std::string_view text) {
    std::string error;
    const std::optional<RateLimit> limit = RateLimit::parse(text, error);
    INFO(text << ": " << error);
    REQUIRE(limit);
    return *limit;
}

} // namespace

TEST_CASE("without burst, one request per interval: the next when it has drained",
          "[limit_table]") {
    LimitTable table(64);
    const std::uint16_t id = table.add_limit(rate("10r/s nodelay")); // one per 100 ms
    const IpAddress client = address("192.0.2.1");
    CHECK(table.take_request(client, id, kStart).outcome == Outcome::admitted);
    const LimitTable::RateVerdict second = table.take_request(client, id, kStart + 30);
    CHECK(second.outcome == Outcome::over_limit);
    CHECK(second.wait_ms == 70);
    // A refused request takes nothing: the wait stays what it was.
    CHECK(table.take_request(client, id, kStart + 60).wait_ms == 40);
    CHECK(table.take_request(client, id, kStart + 100).outcome == Outcome::admitted);
    CHECK(table.take_request(client, id, kStart + 199).outcome == Outcome::over_limit);
    CHECK(table.take_request(client, id, kStart + 200).outcome == Outcome::admitted);
}

TEST_CASE("a burst admits that many more at once, then one per interval", "[limit_table]") {
    LimitTable table(64);
    const std::uint16_t id = table.add_limit(rate("2r/s burst 3 nodelay"));
    const IpAddress client = address("192.0.2.1");
    for (int i = 0; i < 4; ++i) {
        const LimitTable::RateVerdict verdict = table.take_request(client, id, kStart);
        CHECK(verdict.outcome == Outcome::admitted);
        CHECK(verdict.wait_ms == 0); // nodelay
    }
    const LimitTable::RateVerdict over = table.take_request(client, id, kStart);
    CHECK(over.outcome == Outcome::over_limit);
    CHECK(over.wait_ms == 500);
    CHECK(table.take_request(client, id, kStart + 500).outcome == Outcome::admitted);
    CHECK(table.take_request(client, id, kStart + 500).outcome == Outcome::over_limit);
    // Long idle: the whole burst again.
    for (int i = 0; i < 4; ++i)
        CHECK(table.take_request(client, id, kStart + 60'000).outcome == Outcome::admitted);
    CHECK(table.take_request(client, id, kStart + 60'000).outcome == Outcome::over_limit);
}

TEST_CASE("without nodelay, a request within the burst waits for its excess to drain",
          "[limit_table]") {
    LimitTable table(64);
    const std::uint16_t id = table.add_limit(rate("10r/s burst 5"));
    const IpAddress client = address("192.0.2.1");
    CHECK(table.take_request(client, id, kStart).wait_ms == 0);
    CHECK(table.take_request(client, id, kStart).wait_ms == 100);
    CHECK(table.take_request(client, id, kStart).wait_ms == 200);
    CHECK(table.take_request(client, id, kStart + 50).wait_ms == 250);
}

TEST_CASE("a rate a minute refills exactly over the minute", "[limit_table]") {
    LimitTable table(64);
    const std::uint16_t id = table.add_limit(rate("6r/m nodelay")); // one per 10 s
    const IpAddress client = address("192.0.2.1");
    CHECK(table.take_request(client, id, kStart).outcome == Outcome::admitted);
    const LimitTable::RateVerdict over = table.take_request(client, id, kStart + 1);
    CHECK(over.outcome == Outcome::over_limit);
    CHECK(over.wait_ms == 9'999);
    CHECK(table.take_request(client, id, kStart + 9'999).outcome == Outcome::over_limit);
    CHECK(table.take_request(client, id, kStart + 10'000).outcome == Outcome::admitted);
}

TEST_CASE("each address and each limit has its own budget", "[limit_table]") {
    LimitTable table(64);
    const std::uint16_t a = table.add_limit(rate("1r/s nodelay"));
    const std::uint16_t b = table.add_limit(rate("1r/s nodelay"));
    const IpAddress one = address("127.0.0.1");
    const IpAddress two = address("127.0.0.2");
    CHECK(table.take_request(one, a, kStart).outcome == Outcome::admitted);
    CHECK(table.take_request(one, a, kStart).outcome == Outcome::over_limit);
    CHECK(table.take_request(two, a, kStart).outcome == Outcome::admitted);
    CHECK(table.take_request(one, b, kStart).outcome == Outcome::admitted);
}

TEST_CASE("IPv6 clients are keyed by their /64", "[limit_table]") {
    LimitTable table(64);
    const std::uint16_t id = table.add_limit(rate("1r/s nodelay"));
    CHECK(table.take_request(address("2001:db8::1"), id, kStart).outcome == Outcome::admitted);
    CHECK(table.take_request(address("2001:db8::ffff:2"), id, kStart).outcome ==
          Outcome::over_limit);
    CHECK(table.take_request(address("2001:db8:0:1::1"), id, kStart).outcome == Outcome::admitted);
    // An IPv4 client is not the IPv6 /64 ::/64, nor ::ffff:0:0/96's neighbours.
    CHECK(table.take_request(address("::1"), id, kStart).outcome == Outcome::admitted);
    CHECK(table.take_request(address("0.0.0.1"), id, kStart).outcome == Outcome::admitted);
}

TEST_CASE("unix-socket and unknown clients are not limited", "[limit_table]") {
    LimitTable table(1);
    const std::uint16_t id = table.add_limit(rate("1r/m nodelay"));
    IpAddress unix_client{};
    unix_client.family = IpAddress::Family::unix_socket;
    for (int i = 0; i < 3; ++i)
        CHECK(table.take_request(unix_client, id, kStart).outcome == Outcome::admitted);
    CHECK(table.used(kStart) == 0);
}

TEST_CASE("requests in progress are counted up to the limit and released", "[limit_table]") {
    LimitTable table(64);
    const std::uint16_t id = table.add_limit(RateLimit{});
    const IpAddress client = address("198.51.100.7");
    const LimitTable::Hold first = table.acquire(client, id, 2, kStart);
    const LimitTable::Hold second = table.acquire(client, id, 2, kStart);
    REQUIRE(first.outcome == Outcome::admitted);
    REQUIRE(second.outcome == Outcome::admitted);
    CHECK(first.entry == second.entry);
    CHECK(table.acquire(client, id, 2, kStart).outcome == Outcome::over_limit);
    CHECK(table.acquire(address("198.51.100.8"), id, 2, kStart).outcome == Outcome::admitted);
    table.release(first.entry);
    const LimitTable::Hold again = table.acquire(client, id, 2, kStart);
    CHECK(again.outcome == Outcome::admitted);
    table.release(again.entry);
    table.release(second.entry);
    CHECK(table.used(kStart) == 1); // 198.51.100.8's, still held
}

TEST_CASE("a full table refuses new clients until an entry is idle again", "[limit_table]") {
    LimitTable table(2);
    CHECK(table.capacity() == 2);
    const std::uint16_t conns = table.add_limit(RateLimit{});
    const std::uint16_t rated = table.add_limit(rate("1r/s nodelay"));
    const LimitTable::Hold a = table.acquire(address("10.0.0.1"), conns, 8, kStart);
    REQUIRE(a.outcome == Outcome::admitted);
    CHECK(table.take_request(address("10.0.0.2"), rated, kStart).outcome == Outcome::admitted);
    CHECK(table.used(kStart) == 2);
    CHECK(table.acquire(address("10.0.0.3"), conns, 8, kStart).outcome == Outcome::table_full);
    const LimitTable::RateVerdict full = table.take_request(address("10.0.0.3"), rated, kStart);
    CHECK(full.outcome == Outcome::table_full);
    CHECK(full.wait_ms >= 1000);
    // Known clients go on meanwhile.
    CHECK(table.acquire(address("10.0.0.1"), conns, 8, kStart).outcome == Outcome::admitted);
    // 10.0.0.2's bucket drains in a second: its entry is taken then.
    CHECK(table.take_request(address("10.0.0.3"), rated, kStart + 1'000).outcome ==
          Outcome::admitted);
    CHECK(table.take_request(address("10.0.0.2"), rated, kStart + 1'000).outcome ==
          Outcome::table_full);
}

TEST_CASE("the table's size is rounded up to a power of two, and bounded", "[limit_table]") {
    CHECK(LimitTable(0).capacity() == 1);
    CHECK(LimitTable(3).capacity() == 4);
    CHECK(LimitTable(65536).capacity() == 65536);
    CHECK(LimitTable(LimitTable::kMaxEntries * 4).capacity() == LimitTable::kMaxEntries);
}

TEST_CASE("loops acquiring and releasing at once leave every count at zero", "[limit_table]") {
    LimitTable table(16);
    const std::uint16_t id = table.add_limit(RateLimit{});
    const IpAddress clients[2] = {address("10.0.0.1"), address("10.0.0.2")};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&table, &clients, id, t] {
            const IpAddress client = clients[t % 2];
            for (int i = 0; i < 20'000; ++i) {
                const LimitTable::Hold hold = table.acquire(client, id, 1'000, kStart);
                if (hold.outcome == Outcome::admitted) table.release(hold.entry);
            }
        });
    for (std::thread& thread : threads) thread.join();
    CHECK(table.used(kStart) == 0);
}
