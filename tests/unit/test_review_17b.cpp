// Review of issue 17's limits and issue 18's WebSocket codec: what an
// adversary tried that broke, kept as regressions.

#include "util/limit_table.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace weft;
using Outcome = LimitTable::Outcome;

namespace {

constexpr std::uint64_t kStart = 1'000'000;

// The hash a reader of the source computes for an IPv4 client under limit 1,
// before the table's seed is applied (splitmix64's finaliser).
std::uint64_t unseeded_mix(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

IpAddress ipv4(std::uint32_t host_order) {
    IpAddress address{};
    address.family = IpAddress::Family::ipv4;
    const std::uint8_t bytes[4] = {
        static_cast<std::uint8_t>(host_order >> 24), static_cast<std::uint8_t>(host_order >> 16),
        static_cast<std::uint8_t>(host_order >> 8), static_cast<std::uint8_t>(host_order)};
    std::memcpy(address.bytes, bytes, 4);
    return address;
}

} // namespace

TEST_CASE("IPv4 clients chosen offline cannot fill one set of every table: the seed counts",
          "[review_17b][limit_table]") {
    // 64 entries: 8 sets of 8. An attacker with addresses in 198.18.0.0/15
    // picks 9 that the unseeded hash puts in one set; were the seed only
    // XORed onto the IPv6 half of the key, they would share a set in every
    // process, and the 9th (a victim) would get 503 whatever the seed.
    const std::uint16_t id = 1;
    std::vector<IpAddress> chosen;
    for (std::uint32_t host = 0xc6120000; chosen.size() < 9; ++host) {
        const IpAddress a = ipv4(host);
        std::uint32_t v4 = 0;
        std::memcpy(&v4, a.bytes, 4);
        const std::uint64_t key1 = (std::uint64_t{0xffff} << 32) | v4;
        if ((unseeded_mix(key1 + id) & 7) == 0) chosen.push_back(a);
    }
    int full = 0;
    for (int process = 0; process < 4; ++process) {
        LimitTable table(64);
        REQUIRE(table.add_limit(RateLimit{}) == id);
        for (std::size_t i = 0; i + 1 < chosen.size(); ++i)
            (void)table.acquire(chosen[i], id, 1, kStart);
        full += table.acquire(chosen.back(), id, 1, kStart).outcome == Outcome::table_full;
    }
    // Seeded, all 9 in one of 8 sets has odds of 8^-8 a table.
    CHECK(full == 0);
}
