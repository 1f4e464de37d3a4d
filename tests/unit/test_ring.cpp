// The uring backend's own pieces (loop/ring.hpp): the user_data encoding,
// the edge-like semantics of a multishot poll the Loop relies on, the
// generation rule (a closed fd's completions never reach the fd that takes
// its number), and the cancel that lets a closed connection's peer see EOF.
// Skipped (with a warning) where no ring can run.

#include "loop/io.hpp"
#include "loop/loop.hpp"
#include "loop/ring.hpp"

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using weft::Loop;
using weft::Op;
using weft::Ring;
using weft::RingCompletion;
using weft::RingOp;
using weft::yield_value;

namespace {

bool uring_here() {
    if (weft::uring_unavailable().empty()) return true;
    WARN("io_uring unavailable here: " << weft::uring_unavailable());
    return false;
}

struct Pair {
    int fds[2] = {-1, -1};
    Pair() {
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    }
    ~Pair() {
        for (const int fd : fds)
            if (fd >= 0) ::close(fd);
    }
};

// The completions the ring has now, after one enter that does not wait.
std::vector<RingCompletion> completions_now(Ring& ring) {
    ring.submit_and_wait(0);
    std::vector<RingCompletion> out(64);
    out.resize(ring.take(out.data(), 64));
    return out;
}

std::vector<RingCompletion> completions_within(Ring& ring, int ms) {
    ring.submit_and_wait(ms);
    std::vector<RingCompletion> out(64);
    out.resize(ring.take(out.data(), 64));
    return out;
}

} // namespace

TEST_CASE("ring user_data: kind, 24-bit generation and fd survive the round trip", "[ring]") {
    using weft::ring_tag;
    using weft::ring_untag;
    for (const RingOp op : {RingOp::ignored, RingOp::poll, RingOp::accept}) {
        for (const std::uint32_t generation : {0u, 1u, 0xabcdeu, 0xffffffu}) {
            for (const int fd : {0, 1, 1023, 1 << 20, 0x7fffffff}) {
                const weft::RingTag tag = ring_untag(ring_tag(op, generation, fd));
                CHECK(tag.op == op);
                CHECK(tag.generation == generation);
                CHECK(tag.fd == fd);
            }
        }
    }
    // The generation wraps within its 24 bits, never touching kind or fd.
    const weft::RingTag wrapped = ring_untag(ring_tag(RingOp::poll, 0x1000005u, 7));
    CHECK(wrapped.op == RingOp::poll);
    CHECK(wrapped.generation == 5u);
    CHECK(wrapped.fd == 7);
}

TEST_CASE("a multishot poll is edge-like: one completion per wake-up, none for data left",
          "[ring]") {
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    Pair pair;
    REQUIRE(ring->poll(pair.fds[0], POLLIN | POLLRDHUP));
    CHECK(completions_now(*ring).empty()); // nothing to read yet

    REQUIRE(::write(pair.fds[1], "a", 1) == 1);
    auto got = completions_within(*ring, 2000);
    REQUIRE(got.size() == 1);
    CHECK((got[0].res & POLLIN));
    CHECK(got[0].more());
    const weft::RingTag tag = weft::ring_untag(got[0].user_data);
    CHECK(tag.op == RingOp::poll);
    CHECK(tag.fd == pair.fds[0]);
    CHECK(ring->current(tag));

    // The byte is not read: no new completion without a new wake-up (epoll's
    // EPOLLET; the loop's readiness memory depends on it).
    CHECK(completions_now(*ring).empty());
    CHECK(completions_within(*ring, 50).empty());

    // A new byte is a new wake-up.
    REQUIRE(::write(pair.fds[1], "b", 1) == 1);
    got = completions_within(*ring, 2000);
    REQUIRE(got.size() == 1);
    CHECK((got[0].res & POLLIN));

    // The peer's close: a hang-up completion, the multishot going on.
    ::close(pair.fds[1]);
    pair.fds[1] = -1;
    got = completions_within(*ring, 2000);
    REQUIRE(got.size() == 1);
    CHECK((got[0].res & POLLRDHUP));
}

TEST_CASE("a forgotten fd's completions are stale: its generation moved on", "[ring]") {
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    Pair pair;
    const int fd = pair.fds[0];
    REQUIRE(ring->poll(fd, POLLIN | POLLRDHUP));
    completions_now(*ring); // armed
    const std::uint32_t before = ring->generation(fd);
    ring->forget(fd, RingOp::poll, true);
    CHECK(ring->generation(fd) == ((before + 1) & weft::kRingGenerationMask));
    REQUIRE(::write(pair.fds[1], "a", 1) == 1);
    // The cancel's end of the poll comes, under the old generation; nothing
    // current does.
    const auto got = completions_within(*ring, 200);
    for (const RingCompletion& c : got) {
        const weft::RingTag tag = weft::ring_untag(c.user_data);
        CHECK_FALSE(ring->current(tag));
    }
}

namespace {

struct Recorder : weft::FdWatcher {
    int calls = 0;
    Recorder() : weft::FdWatcher{on_ready} {}
    static void on_ready(weft::FdWatcher& self, std::uint8_t) {
        ++static_cast<Recorder&>(self).calls;
    }
};

// Watches a trigger fd: on its first readiness, closes `victim` and makes
// a socketpair that takes its number at once, watched by `fresh`.
struct Reuser : weft::FdWatcher {
    Loop* loop = nullptr;
    int victim = -1;
    int reused = -1; // the new fd, and its peer
    int reused_peer = -1;
    int victim_calls_before = -1;
    Recorder* victim_watcher = nullptr;
    Recorder* fresh = nullptr;
    Reuser() : weft::FdWatcher{on_ready} {}
    static void on_ready(weft::FdWatcher& self, std::uint8_t) {
        auto& r = static_cast<Reuser&>(self);
        if (r.reused >= 0) return;
        r.victim_calls_before = r.victim_watcher->calls;
        r.loop->close_fd(r.victim);
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) return;
        r.reused = pair[0];
        r.reused_peer = pair[1];
        r.loop->watch_fd(pair[0], *r.fresh, weft::kReadable);
    }
};

} // namespace

TEST_CASE("uring: readiness of a closed fd, completed in the same batch, never reaches the fd "
          "that took its number",
          "[ring]") {
    if (!uring_here()) return;
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open(weft::IoBackend::uring) == 0);
    REQUIRE(loop.backend() == weft::IoBackend::uring);
    Pair victim;
    Pair trigger;
    Recorder victim_watcher;
    Recorder fresh;
    Reuser reuser;
    reuser.loop = &loop;
    reuser.victim = victim.fds[0];
    reuser.victim_watcher = &victim_watcher;
    reuser.fresh = &fresh;
    int fresh_calls = -1;
    int failures = 0; // Catch2 stays off the coroutine's stack
    loop.spawn([&] {
        failures += loop.watch_fd(victim.fds[0], victim_watcher, weft::kReadable) != 0;
        failures += loop.watch_fd(trigger.fds[0], reuser, weft::kReadable) != 0;
        weft::io::sleep(20); // both polls armed
        // Both complete in the next enter, the trigger's first: its watcher
        // closes the victim and reuses its number before the victim's
        // completion is handled.
        failures += ::write(trigger.fds[1], "t", 1) != 1;
        failures += ::write(victim.fds[1], "v", 1) != 1;
        weft::io::sleep(50);
        fresh_calls = fresh.calls;
        if (reuser.reused >= 0) loop.unwatch_fd(reuser.reused, fresh);
        loop.unwatch_fd(trigger.fds[0], reuser);
        loop.stop(0ms);
    });
    loop.run();
    victim.fds[0] = -1; // closed by the reuser
    if (reuser.reused >= 0) ::close(reuser.reused);
    if (reuser.reused_peer >= 0) ::close(reuser.reused_peer);
    CHECK(failures == 0);
    CHECK(reuser.reused == reuser.victim);  // the number was taken again
    CHECK(reuser.victim_calls_before == 0); // the victim's completion came after the trigger's
    CHECK(fresh_calls == 0);
}

TEST_CASE("uring: a connection the loop closes gives its peer EOF promptly (its poll cancelled)",
          "[ring]") {
    if (!uring_here()) return;
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open(weft::IoBackend::uring) == 0);
    int calls = 0;
    // Parks first (the poll is armed), then reads the first bytes and
    // closes (unread bytes would make it a reset).
    const std::uint16_t handler = loop.add_handler([&](int fd) -> std::int64_t {
        if (++calls == 1) return yield_value(Op::want_read);
        char byte;
        weft::io::recv_now(fd, &byte, 1);
        return yield_value(Op::abort);
    });
    int pair[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    loop.post([&] { loop.adopt(pair[0], handler); });
    std::thread thread([&] { loop.run(); });
    std::this_thread::sleep_for(20ms);
    REQUIRE(::write(pair[1], "x", 1) == 1);
    // The loop is still running: only the cancel can let the socket go.
    pollfd p{pair[1], POLLIN, 0};
    const int ready = ::poll(&p, 1, 3000);
    char byte = 0;
    const ssize_t n = ready == 1 ? ::recv(pair[1], &byte, 1, MSG_DONTWAIT) : -1;
    loop.post([&] { loop.stop(0ms); });
    thread.join();
    ::close(pair[1]);
    CHECK(calls == 2);
    CHECK(ready == 1);
    CHECK(n == 0);
}
