// Review 18a: a watch_fd that fails must leave no watcher on the entry.
//
// Loop::watch_fd sets entry.data = &watcher before watch() asks epoll, and
// leaves it there when epoll refuses: the caller, told -errno, frees its
// watcher (pubsub::Session::start does `delete this`), and the connection's
// Op::detach then calls on_ready through the freed pointer
// (Loop::detach_connection). FAILS on eb32474 (ASan: heap-use-after-free;
// other builds: the freed watcher is called, the CHECK below sees it).

#include "loop/loop.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <memory>

using namespace std::chrono_literals;
using weft::kReadable;
using weft::kWritable;
using weft::Loop;
using weft::Op;
using weft::yield_value;

namespace {

int calls_after_free = 0;

struct Watcher : weft::FdWatcher {
    bool freed = false;
    Watcher() : weft::FdWatcher{on_ready} {}
    static void on_ready(weft::FdWatcher& self, std::uint8_t) {
        if (static_cast<Watcher&>(self).freed) ++calls_after_free;
    }
};

} // namespace

TEST_CASE("a watch_fd that epoll refuses leaves no watcher for Op::detach to call", "[loop]") {
    weft::FdTable table;
    Loop loop(table);
    // epoll only: the ring's poll fails later, in its completion (a hang-up
    // for the watcher), so watch_fd itself never fails there.
    REQUIRE(loop.open(weft::IoBackend::epoll) == 0);
    // epoll refuses /dev/null (EPERM): as a failed EPOLL_CTL_ADD/MOD would.
    const int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    // Kept alive (marked freed, not deleted) so the non-ASan build sees the call.
    auto watcher = std::make_unique<Watcher>();
    int watched = 1;
    const std::uint16_t handler = loop.add_handler([&](int f) -> std::int64_t {
        watched = loop.watch_fd(f, *watcher, kReadable | kWritable);
        if (watched != 0) watcher->freed = true; // what Session::start does: delete this
        return yield_value(Op::detach);
    });
    loop.post([&] {
        loop.adopt(fd, handler);
        loop.stop(100ms);
    });
    loop.run();
    CHECK(watched != 0);
    CHECK(calls_after_free == 0);
}
