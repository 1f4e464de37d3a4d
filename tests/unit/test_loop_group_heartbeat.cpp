// The group's heartbeat (systemd's watchdog) beats only while every loop
// turns, and on_stopping runs once when a stop begins.

#include "loop/loop_group.hpp"
#include "signals_blocked.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

using namespace std::chrono_literals;
using weft::LoopGroup;

TEST_CASE("the heartbeat stops while one loop is stuck and resumes after it", "[loop]") {
    SignalsBlocked blocked;
    LoopGroup group({.threads = 2});
    std::string error;
    REQUIRE(group.open(error) == 0);
    std::atomic<int> beats{0}, stopping{0};
    std::atomic<bool> stuck{false};
    group.on_heartbeat(20ms, [&] { ++beats; });
    group.on_stopping([&] { ++stopping; });
    int before = 0, during = 0;
    std::thread driver([&] {
        for (int i = 0; i < 500 && beats < 3; ++i) std::this_thread::sleep_for(10ms);
        before = beats;
        group.loop(1).post([&] {
            stuck = true;
            std::this_thread::sleep_for(300ms); // a handler that hangs the loop
            stuck = false;
        });
        for (int i = 0; i < 100 && !stuck; ++i) std::this_thread::sleep_for(5ms);
        const int at_stuck = beats;
        std::this_thread::sleep_for(250ms);
        during = beats - at_stuck;
        for (int i = 0; i < 500 && beats < before + 4; ++i) std::this_thread::sleep_for(10ms);
        group.stop();
    });
    group.run();
    driver.join();
    CHECK(before >= 3);
    // One beat may already have been answered before the loop got stuck.
    CHECK(during <= 1);
    CHECK(beats >= before + 4);
    CHECK(stopping == 1);
}
