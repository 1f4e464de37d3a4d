// The timer wheel against a plain ordered model, plus the cases that matter.

#include "loop/timer_wheel.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <vector>

using weft::Timer;
using weft::TimerWheel;

namespace {

// A timer that records when it fired.
struct Probe : Timer {
    int id = 0;
    std::vector<std::pair<std::uint64_t, int>>* log = nullptr; // (deadline, id)
    Probe() {
        fire = [](Timer& t) {
            auto& p = static_cast<Probe&>(t);
            p.log->emplace_back(p.deadline, p.id);
        };
    }
};

} // namespace

TEST_CASE("timers fire at their deadline, in deadline order", "[timer]") {
    TimerWheel wheel(1000);
    std::vector<std::pair<std::uint64_t, int>> log;
    std::vector<Probe> probes(5000);
    std::mt19937_64 rng(42);
    for (int i = 0; i < 5000; ++i) {
        probes[i].id = i;
        probes[i].log = &log;
        // Spread over every level: up to about 20 minutes ahead.
        const std::uint64_t ahead = rng() % (1u << (4 + rng() % 17));
        wheel.arm(probes[i], 1000 + ahead);
    }
    std::uint64_t now = 1000;
    std::size_t checked = 0;
    while (checked < probes.size()) {
        const std::int64_t wait = wheel.next_timeout(now);
        REQUIRE(wait >= 0);
        now += static_cast<std::uint64_t>(wait) + rng() % 3;
        wheel.advance(now);
        for (; checked < log.size(); ++checked) {
            // Never early, and never left behind by an earlier advance.
            REQUIRE(log[checked].first <= now);
            if (checked > 0) REQUIRE(log[checked - 1].first <= log[checked].first);
        }
    }
    CHECK(wheel.next_timeout(now) == -1);
    std::vector<int> ids;
    for (auto& [deadline, id] : log) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
}

TEST_CASE("a deadline pushed back fires at the later one, pulled in at the earlier", "[timer]") {
    TimerWheel wheel(0);
    std::vector<std::pair<std::uint64_t, int>> log;
    Probe near, far;
    near.log = far.log = &log;
    near.id = 1;
    far.id = 2;
    // Pushed back within level 0, and from level 0 to an upper level (a
    // connection's keep-alive timeout, pushed back at every request).
    wheel.arm(near, 10);
    wheel.arm(near, 200);
    wheel.arm(far, 100);
    wheel.arm(far, 70'000);
    CHECK(wheel.arms() == 4);
    for (std::uint64_t now = 0; now <= 70'000 && log.size() < 2; now += 7) wheel.advance(now);
    REQUIRE(log.size() == 2);
    CHECK(log[0] == std::pair<std::uint64_t, int>{200, 1});
    CHECK(log[1] == std::pair<std::uint64_t, int>{70'000, 2});
    CHECK_FALSE(near.armed());
    CHECK_FALSE(far.armed());

    // An earlier deadline moves the timer at once.
    log.clear();
    wheel.arm(near, wheel.clock() + 5'000);
    wheel.arm(near, wheel.clock() + 50);
    const std::uint64_t due = near.deadline;
    wheel.advance(due - 1);
    CHECK(log.empty());
    wheel.advance(due);
    REQUIRE(log.size() == 1);
    CHECK(log[0].first == due);
}

TEST_CASE("next_timeout never sleeps past a deadline", "[timer]") {
    TimerWheel wheel(0);
    CHECK(wheel.next_timeout(0) == -1);
    std::vector<std::pair<std::uint64_t, int>> log;
    Probe a;
    a.log = &log;
    for (std::uint64_t ahead : {0ull, 1ull, 5ull, 255ull, 256ull, 300ull, 16383ull, 16384ull,
                                100000ull, 5000000ull, 3000000000ull}) {
        log.clear();
        const std::uint64_t start = wheel.clock();
        wheel.arm(a, start + ahead);
        std::uint64_t now = start;
        // Sleep exactly as long as told, as the loop does.
        while (log.empty()) {
            const std::int64_t wait = wheel.next_timeout(now);
            REQUIRE(wait >= 0);
            now += static_cast<std::uint64_t>(wait);
            wheel.advance(now);
            if (log.empty()) REQUIRE(now < start + ahead);
        }
        INFO("armed " << ahead << " ms ahead");
        CHECK(now == start + ahead);
        CHECK(wheel.next_timeout(now) == -1);
        now += 1;
        wheel.advance(now);
    }
}

TEST_CASE("a cancelled timer never fires, cancel is idempotent", "[timer]") {
    TimerWheel wheel(0);
    std::vector<std::pair<std::uint64_t, int>> log;
    std::vector<Probe> probes(1000);
    for (int i = 0; i < 1000; ++i) {
        probes[i].id = i;
        probes[i].log = &log;
        wheel.arm(probes[i], static_cast<std::uint64_t>(i) * 37);
    }
    for (int i = 0; i < 1000; i += 2) {
        probes[i].cancel();
        probes[i].cancel();
        CHECK_FALSE(probes[i].armed());
        // The deadline stays: a parked connection reads it when it wakes.
        CHECK(probes[i].deadline == static_cast<std::uint64_t>(i) * 37);
    }
    wheel.advance(1000 * 37);
    REQUIRE(log.size() == 500);
    for (auto& [deadline, id] : log) CHECK(id % 2 == 1);
}

TEST_CASE("a million timers armed and cancelled", "[timer]") {
    TimerWheel wheel(0);
    auto timers = std::make_unique<Timer[]>(1'000'000);
    int fired = 0;
    static int* counter = nullptr;
    counter = &fired;
    std::mt19937 rng(7);
    for (int i = 0; i < 1'000'000; ++i) {
        timers[i].fire = [](Timer&) { ++*counter; };
        wheel.arm(timers[i], 1 + rng() % 3'600'000);
    }
    for (int i = 0; i < 1'000'000; ++i) timers[i].cancel();
    CHECK(wheel.next_timeout(0) == -1); // stale slot marks are cleaned up
    wheel.advance(4'000'000);
    CHECK(fired == 0);
}

TEST_CASE("a timer can re-arm itself from its callback", "[timer]") {
    struct Periodic : Timer {
        TimerWheel* wheel;
        std::vector<std::uint64_t> at;
    } p;
    TimerWheel wheel(0);
    p.wheel = &wheel;
    p.fire = [](Timer& t) {
        auto& self = static_cast<Periodic&>(t);
        self.at.push_back(self.deadline);
        if (self.at.size() < 5) self.wheel->arm(self, self.deadline + 100);
    };
    wheel.arm(p, 100);
    wheel.advance(10'000);
    CHECK(p.at == std::vector<std::uint64_t>{100, 200, 300, 400, 500});

    // Re-arming for "now" or the past waits for the next tick.
    p.at.clear();
    p.fire = [](Timer& t) {
        auto& self = static_cast<Periodic&>(t);
        self.at.push_back(self.wheel->clock());
        if (self.at.size() < 3) self.wheel->arm(self, 0);
    };
    wheel.arm(p, 0);
    CHECK(wheel.advance(10'000) == 0); // the wheel is past 10'000 already
    CHECK(wheel.advance(10'001) == 1);
    CHECK(wheel.advance(10'002) == 1);
    CHECK(wheel.advance(10'003) == 1);
    CHECK(wheel.advance(20'000) == 0);
    CHECK(p.at == std::vector<std::uint64_t>{10'002, 10'003, 10'004});
}

TEST_CASE("random arm, cancel and advance agree with an ordered model", "[timer]") {
    std::mt19937_64 rng(2026);
    TimerWheel wheel(123456);
    std::vector<std::pair<std::uint64_t, int>> log;
    std::vector<Probe> probes(300);
    std::multimap<std::uint64_t, int> model; // deadline -> id
    for (int i = 0; i < 300; ++i) {
        probes[i].id = i;
        probes[i].log = &log;
    }
    auto forget = [&](int id) {
        for (auto it = model.begin(); it != model.end(); ++it)
            if (it->second == id) {
                model.erase(it);
                return;
            }
    };
    std::uint64_t now = 123456;
    for (int step = 0; step < 200'000; ++step) {
        const int id = static_cast<int>(rng() % probes.size());
        switch (rng() % 4) {
        case 0:
        case 1: {
            const std::uint64_t ahead = rng() % (1u << (rng() % 24));
            forget(id);
            wheel.arm(probes[id], now + ahead);
            model.emplace(std::max(now + ahead, wheel.clock()), id);
            break;
        }
        case 2:
            forget(id);
            probes[id].cancel();
            break;
        default: {
            const std::int64_t wait = wheel.next_timeout(now);
            if (model.empty()) {
                REQUIRE(wait == -1);
            } else {
                REQUIRE(wait >= 0);
                REQUIRE(now + static_cast<std::uint64_t>(wait) <= model.begin()->first);
            }
            now += rng() % (1u << (rng() % 16));
            log.clear();
            wheel.advance(now);
            std::vector<int> expected;
            while (!model.empty() && model.begin()->first <= now) {
                expected.push_back(model.begin()->second);
                model.erase(model.begin());
            }
            std::vector<int> got;
            for (std::size_t k = 0; k < log.size(); ++k) {
                if (k > 0) REQUIRE(log[k - 1].first <= log[k].first);
                got.push_back(log[k].second);
            }
            std::sort(expected.begin(), expected.end());
            std::sort(got.begin(), got.end());
            REQUIRE(got == expected);
        }
        }
    }
}
