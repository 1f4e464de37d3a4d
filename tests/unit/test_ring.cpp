// The uring backend's own pieces (loop/ring.hpp): the user_data encoding,
// the edge-like semantics of a multishot poll the Loop relies on, the
// generation rule (a closed fd's completions never reach the fd that takes
// its number), and the cancel that lets a closed connection's peer see EOF.
// Skipped (with a warning) where no ring can run.

#include "loop/io.hpp"
#include "loop/listener.hpp"
#include "loop/loop.hpp"
#include "loop/ring.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
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

TEST_CASE("a poll update grows the mask of a multishot poll, which goes on", "[ring]") {
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    Pair pair;
    REQUIRE(ring->poll(pair.fds[0], POLLIN | POLLRDHUP));
    CHECK(completions_now(*ring).empty());
    // Writable already: the update reports it at once, as EPOLL_CTL_MOD does.
    REQUIRE(ring->update_poll(pair.fds[0], POLLIN | POLLOUT | POLLRDHUP));
    auto got = completions_within(*ring, 2000);
    REQUIRE(got.size() == 1); // the update's own completion skipped: it worked
    CHECK(weft::ring_untag(got[0].user_data).op == RingOp::poll);
    CHECK((got[0].res & POLLOUT));
    CHECK(got[0].more());
    REQUIRE(::write(pair.fds[1], "a", 1) == 1);
    got = completions_within(*ring, 2000);
    REQUIRE(got.size() == 1);
    CHECK((got[0].res & POLLIN));
}

TEST_CASE("a poll update that meets the poll completing fails with EALREADY, and the loop's "
          "retry grows the mask",
          "[ring]") {
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    Pair pair;
    REQUIRE(::write(pair.fds[1], "a", 1) == 1); // ready when armed
    REQUIRE(ring->poll(pair.fds[0], POLLIN | POLLRDHUP));
    REQUIRE(ring->update_poll(pair.fds[0], POLLIN | POLLOUT | POLLRDHUP));
    auto got = completions_within(*ring, 2000);
    bool refused = false;
    for (const RingCompletion& c : got) {
        const weft::RingTag tag = weft::ring_untag(c.user_data);
        if (tag.op == RingOp::update) refused = c.res == -EALREADY && ring->current(tag);
    }
    // What Loop::wait_on_ring does then.
    if (refused) REQUIRE(ring->update_poll(pair.fds[0], POLLIN | POLLOUT | POLLRDHUP));
    got = completions_within(*ring, 2000);
    bool writable = false;
    for (const RingCompletion& c : got)
        if (weft::ring_untag(c.user_data).op == RingOp::poll && c.res > 0 && (c.res & POLLOUT))
            writable = true;
    CHECK(writable);
}

TEST_CASE("uring: a listener out of fds pauses its multishot accept, and accepts again once fds "
          "are back",
          "[ring]") {
    if (!uring_here()) return;
    weft::FdTable table;
    Loop loop(table);
    REQUIRE(loop.open(weft::IoBackend::uring) == 0);
    std::string error;
    const auto address = weft::Address::parse("127.0.0.1:0", error);
    const int listen_fd = weft::open_listener(*address, error);
    REQUIRE(listen_fd >= 0);
    const std::uint16_t port = weft::Address::of_socket(listen_fd)->port();
    std::atomic<int> served{0};
    REQUIRE(loop.add_listener(listen_fd, loop.add_handler([&](int) -> std::int64_t {
        ++served;
        return 0;
    }),
                              false) == 0);
    // Every fd taken but one, which the client's socket takes: the server's
    // accept then fails with EMFILE. Before the loop's first enter: the
    // kernel reads RLIMIT_NOFILE once, when the multishot accept is armed.
    // (The thread starts before, and nothing virtual runs while the fds are
    // out: UBSan's vptr check needs an fd.)
    std::atomic<bool> started{false};
    std::atomic<bool> filled{false};
    std::thread thread([&] {
        started = true;
        while (!filled) std::this_thread::sleep_for(1ms);
        loop.run();
    });
    while (!started) std::this_thread::sleep_for(1ms);
    rlimit saved{};
    REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
    rlimit low = saved;
    low.rlim_cur = 128;
    REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
    std::vector<int> fillers;
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fillers.push_back(fd);
    ::close(fillers.back());
    fillers.pop_back();
    filled = true;
    const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool connected =
        client >= 0 && ::connect(client, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
    std::atomic<std::uint64_t> pauses{0};
    for (int i = 0; i < 300 && pauses == 0; ++i) {
        std::this_thread::sleep_for(10ms);
        loop.post([&] { pauses = loop.stats().accept_pauses; });
    }
    const int served_while_full = served;
    for (const int fd : fillers) ::close(fd);
    setrlimit(RLIMIT_NOFILE, &saved);
    for (int i = 0; i < 300 && served == 0; ++i) std::this_thread::sleep_for(10ms);
    loop.post([&] { loop.stop(0ms); });
    thread.join();
    if (client >= 0) ::close(client);
    CHECK(connected);
    CHECK(pauses >= 1);
    CHECK(served_while_full == 0);
    CHECK(served == 1);
}

TEST_CASE("a CQ overflow loses no completion, and every poll reports again after it", "[ring]") {
    if (!uring_here()) return;
    int error = 0;
    constexpr int kPairs = 200;
    auto ring = Ring::open(4096, error, 16, 32); // a CQ far smaller than the burst
    REQUIRE(ring);
    std::vector<Pair> pairs(kPairs);
    std::vector<int> index_of(4096, -1);
    for (int i = 0; i < kPairs; ++i) {
        REQUIRE(ring->poll(pairs[i].fds[0], POLLIN | POLLRDHUP)); // a full SQ submits early
        index_of[pairs[i].fds[0]] = i;
    }
    completions_now(*ring);
    for (Pair& pair : pairs) REQUIRE(::write(pair.fds[1], "a", 1) == 1);
    std::vector<int> seen(kPairs, 0);
    std::vector<int> ended;
    for (int round = 0; round < 100; ++round) {
        for (const RingCompletion& c : completions_now(*ring)) {
            const weft::RingTag tag = weft::ring_untag(c.user_data);
            REQUIRE(tag.op == RingOp::poll);
            REQUIRE(c.res > 0);
            ++seen[index_of[tag.fd]];
            if (!c.more()) ended.push_back(tag.fd);
        }
    }
    // NODROP: every readiness came, the overflowed ones later. (A kernel
    // that cannot keep one ends the multishot without F_MORE: on 6.18 none
    // ended here, the overflow list kept them all.)
    for (int i = 0; i < kPairs; ++i) CHECK(seen[i] == 1);
    // What Loop::on_poll does: arm again what ended; then every fd reports.
    for (const int fd : ended) REQUIRE(ring->poll(fd, POLLIN | POLLRDHUP));
    completions_now(*ring); // armed (still readable: reported at once)
    std::fill(seen.begin(), seen.end(), 0);
    for (Pair& pair : pairs) REQUIRE(::write(pair.fds[1], "b", 1) == 1);
    for (int round = 0; round < 100; ++round)
        for (const RingCompletion& c : completions_now(*ring))
            ++seen[index_of[weft::ring_untag(c.user_data).fd]];
    for (int i = 0; i < kPairs; ++i) CHECK(seen[i] >= 1);
}

// --- stage 2: bytes through the ring ---------------------------------------------

namespace {

// The completions of kind `op` among those that come within `ms`.
std::vector<RingCompletion> completions_of(Ring& ring, RingOp op, int ms) {
    std::vector<RingCompletion> out;
    for (const RingCompletion& c : completions_within(ring, ms))
        if (weft::ring_untag(c.user_data).op == op) out.push_back(c);
    return out;
}

std::string drain_socket(int fd) {
    std::string got;
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n <= 0) return got;
        got.append(buffer, static_cast<std::size_t>(n));
    }
}

} // namespace

TEST_CASE("a ring receive takes bytes into a provided buffer, handed out in pieces",
          "[ring][bytes]") {
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    REQUIRE(ring->moves_bytes());
    Pair pair;
    const int fd = pair.fds[0];
    REQUIRE(ring->receive(fd));
    CHECK(ring->receiving(fd));
    CHECK(completions_now(*ring).empty()); // nothing sent yet: it waits
    REQUIRE(::send(pair.fds[1], "hello, ring", 11, 0) == 11);
    const auto received = completions_of(*ring, RingOp::receive, 1000);
    REQUIRE(received.size() == 1);
    REQUIRE(ring->on_receive(weft::ring_untag(received[0].user_data), received[0]));
    CHECK_FALSE(ring->receiving(fd));
    REQUIRE(ring->holds_input(fd));
    char into[16] = {};
    bool drained = true;
    CHECK(ring->take_input(fd, into, 5, drained) == 5);
    CHECK_FALSE(drained); // more is held
    CHECK(std::string(into, 5) == "hello");
    CHECK(ring->take_input(fd, into, sizeof into, drained) == 6);
    CHECK(drained); // a short receive: the socket was empty
    CHECK(std::string(into, 6) == ", ring");
    CHECK_FALSE(ring->holds_input(fd));

    // The end of stream is kept, and said on every read.
    REQUIRE(ring->receive(fd));
    ::shutdown(pair.fds[1], SHUT_WR);
    const auto ended = completions_of(*ring, RingOp::receive, 1000);
    REQUIRE(ended.size() == 1);
    REQUIRE(ring->on_receive(weft::ring_untag(ended[0].user_data), ended[0]));
    CHECK(ring->take_input(fd, into, sizeof into, drained) == 0);
    CHECK(ring->take_input(fd, into, sizeof into, drained) == 0);
}

TEST_CASE("ring receive buffers go back: many more receives than buffers, none lost",
          "[ring][bytes]") {
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    Pair pair;
    const int fd = pair.fds[0];
    char into[Ring::kReceiveBufferSize];
    for (unsigned i = 0; i < 3 * Ring::kReceiveBuffers; ++i) {
        REQUIRE(ring->receive(fd));
        const std::string message = "message " + std::to_string(i);
        REQUIRE(::send(pair.fds[1], message.data(), message.size(), 0) ==
                static_cast<ssize_t>(message.size()));
        const auto received = completions_of(*ring, RingOp::receive, 1000);
        REQUIRE(received.size() == 1);
        REQUIRE(received[0].res == static_cast<int>(message.size()));
        REQUIRE(ring->on_receive(weft::ring_untag(received[0].user_data), received[0]));
        bool drained = false;
        REQUIRE(ring->take_input(fd, into, sizeof into, drained) ==
                static_cast<ssize_t>(message.size()));
        REQUIRE(std::string(into, message.size()) == message);
    }
}

TEST_CASE("a full receive buffer says more may wait, a stale receive's buffer goes back",
          "[ring][bytes]") {
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    Pair pair;
    const int fd = pair.fds[0];
    const std::string big(Ring::kReceiveBufferSize + 100, 'x');
    REQUIRE(::send(pair.fds[1], big.data(), big.size(), 0) == static_cast<ssize_t>(big.size()));
    REQUIRE(ring->receive(fd));
    const auto received = completions_of(*ring, RingOp::receive, 1000);
    REQUIRE(received.size() == 1);
    REQUIRE(received[0].res == static_cast<int>(Ring::kReceiveBufferSize));
    REQUIRE(ring->on_receive(weft::ring_untag(received[0].user_data), received[0]));
    char into[Ring::kReceiveBufferSize];
    bool drained = true;
    CHECK(ring->take_input(fd, into, sizeof into, drained) == Ring::kReceiveBufferSize);
    CHECK_FALSE(drained); // the rest is in the socket: the caller reads it itself

    // Forgotten while its receive completes: the completion is stale and
    // its buffer goes back (every buffer can still be used after).
    REQUIRE(ring->receive(fd));
    ring->forget(fd, RingOp::poll, false);
    CHECK_FALSE(ring->receiving(fd));
    std::size_t taken_stale = 0; // the receive may complete before its cancel
    for (const RingCompletion& c : completions_of(*ring, RingOp::receive, 200)) {
        CHECK_FALSE(ring->on_receive(weft::ring_untag(c.user_data), c));
        if (c.res > 0) taken_stale += static_cast<std::size_t>(c.res);
    }
    CHECK_FALSE(ring->holds_input(fd));
    CHECK(drain_socket(fd).size() + taken_stale == 100);
    // Every buffer is still there: as many receives as buffers, all held at once.
    std::vector<Pair> pairs(Ring::kReceiveBuffers);
    for (Pair& p : pairs) {
        REQUIRE(ring->receive(p.fds[0]));
        REQUIRE(::send(p.fds[1], "x", 1, 0) == 1);
    }
    unsigned held = 0;
    for (int round = 0; round < 100 && held < Ring::kReceiveBuffers; ++round)
        for (const RingCompletion& c : completions_of(*ring, RingOp::receive, 10))
            if (ring->on_receive(weft::ring_untag(c.user_data), c) && c.res == 1) ++held;
    CHECK(held == Ring::kReceiveBuffers);
}

TEST_CASE("a ring send copies the bytes: one in flight per fd, an error kept for the next",
          "[ring][bytes]") {
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    Pair pair;
    const int fd = pair.fds[0];
    std::string head = "HTTP/1.1 200 OK\r\n\r\n";
    std::string body = "body";
    iovec iov[2] = {{head.data(), head.size()}, {body.data(), body.size()}};
    REQUIRE(ring->send(fd, iov, 2) == head.size() + body.size());
    CHECK(ring->sending(fd));
    head.assign(head.size(), '!');      // copied: the caller's memory is free at once
    CHECK(ring->send(fd, iov, 2) == 0); // one in flight
    const auto sent = completions_of(*ring, RingOp::send, 1000);
    REQUIRE(sent.size() == 1);
    CHECK(ring->on_send(weft::ring_untag(sent[0].user_data), sent[0]) == fd);
    CHECK_FALSE(ring->sending(fd));
    CHECK(ring->take_send_error(fd) == 0);
    CHECK(drain_socket(pair.fds[1]) == "HTTP/1.1 200 OK\r\n\r\nbody");

    // Larger than a slot: the caller sends it itself.
    std::string large(Ring::kSendSlotSize + 1, 'l');
    iovec one{large.data(), large.size()};
    CHECK(ring->send(fd, &one, 1) == 0);

    // The peer gone: the send fails, and the next caller hears it.
    ::close(pair.fds[1]);
    pair.fds[1] = -1;
    REQUIRE(ring->send(fd, iov, 2) > 0);
    const auto failed = completions_of(*ring, RingOp::send, 1000);
    REQUIRE(failed.size() == 1);
    CHECK(ring->on_send(weft::ring_untag(failed[0].user_data), failed[0]) == fd);
    CHECK(ring->take_send_error(fd) == -EPIPE);
    CHECK(ring->take_send_error(fd) == 0);
}

TEST_CASE("a ring send larger than the socket takes goes on to its end, every slot is reused",
          "[ring][bytes]") {
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    Pair pair;
    const int small = 4096;
    ::setsockopt(pair.fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ::setsockopt(pair.fds[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    std::string expected;
    for (unsigned i = 0; i < 2 * Ring::kSendSlots; ++i) {
        std::string bytes(Ring::kSendSlotSize, static_cast<char>('a' + i % 26));
        iovec iov{bytes.data(), bytes.size()};
        REQUIRE(ring->send(pair.fds[0], &iov, 1) == bytes.size());
        expected += bytes;
        std::string got;
        int ended = -1;
        for (int round = 0; round < 1000 && ended < 0; ++round) {
            for (const RingCompletion& c : completions_of(*ring, RingOp::send, 10))
                ended = ring->on_send(weft::ring_untag(c.user_data), c);
            got += drain_socket(pair.fds[1]);
        }
        REQUIRE(ended == pair.fds[0]);
        got += drain_socket(pair.fds[1]);
        REQUIRE(got == bytes);
    }
}

TEST_CASE("an orphan send ends by closing its fd, a cancelled one too", "[ring][bytes]") {
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    Pair pair;
    const int fd = pair.fds[0];
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ::setsockopt(pair.fds[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    std::string bytes(Ring::kSendSlotSize, 'o');
    iovec iov{bytes.data(), bytes.size()};
    REQUIRE(ring->send(fd, &iov, 1) == bytes.size());
    // The socket takes part of it; the rest waits in the ring.
    for (int round = 0; round < 3; ++round)
        for (const RingCompletion& c : completions_of(*ring, RingOp::send, 10))
            CHECK(ring->on_send(weft::ring_untag(c.user_data), c) < 0);
    REQUIRE(ring->sending(fd));
    weft::SendSlot* slot = ring->orphan(fd);
    REQUIRE(slot);
    ring->forget(fd, RingOp::poll, false);
    ring->cancel_send(*slot);
    bool closed = false;
    for (int round = 0; round < 100 && !closed; ++round) {
        for (const RingCompletion& c : completions_of(*ring, RingOp::send, 10))
            CHECK(ring->on_send(weft::ring_untag(c.user_data), c) < 0); // an orphan wakes nobody
        closed = ::fcntl(fd, F_GETFD) == -1;
    }
    CHECK(closed);
    // The slot closed the fd: the peer sees the end after what was sent.
    pair.fds[0] = -1;
    std::string got;
    char buffer[4096];
    for (int i = 0; i < 1000; ++i) {
        const ssize_t n = ::recv(pair.fds[1], buffer, sizeof buffer, MSG_DONTWAIT);
        if (n == 0) break;
        if (n > 0) got.append(buffer, static_cast<std::size_t>(n));
        if (n < 0) std::this_thread::sleep_for(1ms);
    }
    CHECK(got.size() < bytes.size()); // cut short by the cancel, in order
    CHECK(got == std::string(got.size(), 'o'));
}

TEST_CASE("a short send of an fd forgotten since is not continued: its number may be reused",
          "[ring][bytes]") {
    // A backend's fd (FastCGI's request through a slot): closing the
    // connection forgets the fd, with no orphan to keep it open.
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    Pair pair;
    const int fd = pair.fds[0];
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ::setsockopt(pair.fds[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    std::string bytes(Ring::kSendSlotSize, 'f');
    iovec iov{bytes.data(), bytes.size()};
    REQUIRE(ring->send(fd, &iov, 1) == bytes.size());
    ring->forget(fd, RingOp::poll, false); // the loop lets go of the fd
    // The peer reads: the socket takes more, and the send's first part ends.
    std::string got;
    bool ended = false;
    for (int round = 0; round < 200 && !ended; ++round) {
        got += drain_socket(pair.fds[1]);
        for (const RingCompletion& c : completions_of(*ring, RingOp::send, 10)) {
            // Stale: no writer to wake, and the slot is free again at once.
            CHECK(ring->on_send(weft::ring_untag(c.user_data), c) < 0);
            ended = true;
        }
    }
    REQUIRE(ended);
    for (int i = 0; i < 20; ++i) {
        got += drain_socket(pair.fds[1]);
        CHECK(completions_of(*ring, RingOp::send, 5).empty()); // the rest never went
    }
    CHECK(got.size() < bytes.size());
    CHECK(got == std::string(got.size(), 'f'));
    // Its slot is free again: the fd (or the next one with its number) sends.
    iovec one{bytes.data(), 16};
    CHECK(ring->send(fd, &one, 1) == 16);
}

TEST_CASE("a send queued for an fd that is forgotten and closed never reaches the fd's next owner",
          "[ring][bytes]") {
    // A kept backend's request in a slot, its connection ended before the
    // tick's enter: the retry's new connection gets the closed fd's number.
    if (!uring_here()) return;
    int error = 0;
    auto ring = Ring::open(1024, error);
    REQUIRE(ring);
    auto old_pair = std::make_unique<Pair>();
    const int fd = old_pair->fds[0];
    std::string request(100, 'o');
    iovec iov{request.data(), request.size()};
    REQUIRE(ring->send(fd, &iov, 1) == request.size()); // queued, not yet submitted
    ring->forget(fd, RingOp::poll, false);
    ::close(fd);
    old_pair->fds[0] = -1;
    Pair next; // the lowest free number: the closed fd's
    REQUIRE(next.fds[0] == fd);
    std::string got;
    for (int round = 0; round < 20; ++round) {
        for (const RingCompletion& c : completions_of(*ring, RingOp::send, 5))
            CHECK(ring->on_send(weft::ring_untag(c.user_data), c) < 0); // stale
        got += drain_socket(next.fds[1]);
    }
    CHECK(got.empty());
}
