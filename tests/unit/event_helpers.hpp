#pragma once
// A loop for event tests: spawn coroutines, then run until they have all
// ended (stop() with a long grace ends the loop when no task is left).

#include "loop/loop.hpp"

#include <catch2/catch.hpp>

#include <chrono>

namespace test {

struct EventLoop {
    weft::FdTable table;
    weft::Loop loop{table};
    explicit EventLoop(weft::IoBackend backend = weft::default_io_backend()) {
        REQUIRE(loop.open(backend) == 0);
    }
    template <class F>
    void spawn(F&& body) {
        REQUIRE(loop.spawn(std::forward<F>(body)));
    }
    void run() {
        loop.spawn([this] { loop.stop(std::chrono::seconds(20)); });
        loop.run();
    }
};

} // namespace test
