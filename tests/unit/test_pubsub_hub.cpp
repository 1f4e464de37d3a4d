// The hub's fan-out and the sessions, on a real loop over socketpairs: what
// each subscriber's socket receives (history first, every message once and
// in order), the queue's bound (1008 for a subscriber that does not read,
// while the others get everything), pings and the close handshake, client
// publishing, and a loop's stop (1001). No allocation per subscriber per
// message: the count is the same for 1 subscriber and for 50.
//
// Catch2's assertions are not for coroutines: code on the loop records what
// it sees, and the test checks it after the loop has run.

#include "allocation_count.hpp"
#include "handlers/pubsub/hub.hpp"
#include "handlers/pubsub/message.hpp"
#include "handlers/pubsub/session.hpp"
#include "handlers/pubsub/topics.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using namespace weft::handlers::pubsub;
using weft::Loop;

namespace {

struct Frame {
    int opcode;
    std::string payload;
};

// Server frames (unmasked) from the bytes a client read.
std::vector<Frame> frames_of(const std::string& bytes) {
    std::vector<Frame> frames;
    std::size_t at = 0;
    while (at + 2 <= bytes.size()) {
        const int opcode = static_cast<unsigned char>(bytes[at]) & 0x0f;
        std::uint64_t length = static_cast<unsigned char>(bytes[at + 1]) & 0x7f;
        std::size_t header = 2;
        if (length == 126) {
            length = (std::uint64_t(static_cast<unsigned char>(bytes[at + 2])) << 8) |
                     static_cast<unsigned char>(bytes[at + 3]);
            header = 4;
        } else if (length == 127) {
            length = 0;
            for (int i = 0; i < 8; ++i)
                length = length << 8 | static_cast<unsigned char>(bytes[at + 2 + i]);
            header = 10;
        }
        if (at + header + length > bytes.size()) break;
        frames.push_back({opcode, bytes.substr(at + header, length)});
        at += header + length;
    }
    return frames;
}

// A masked client frame.
std::string client_frame(int opcode, std::string_view payload) {
    std::string frame;
    frame += static_cast<char>(0x80 | opcode);
    frame += static_cast<char>(0x80 | payload.size()); // short frames only
    const char mask[4] = {0x11, 0x22, 0x33, 0x44};
    frame.append(mask, 4);
    for (std::size_t i = 0; i < payload.size(); ++i)
        frame += static_cast<char>(payload[i] ^ mask[i % 4]);
    return frame;
}

std::string read_now(int fd) {
    std::string got;
    static thread_local char buffer[65536]; // not on a coroutine's stack
    ssize_t n;
    while ((n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT)) > 0)
        got.append(buffer, static_cast<std::size_t>(n));
    return got;
}

struct Bench {
    std::shared_ptr<TopicSpace> space = std::make_shared<TopicSpace>();
    weft::FdTable table{4096};
    Loop loop{table};
    LoopHub* hub = nullptr;
    SessionSettings settings;
    std::vector<int> clients; // the client ends, closed by the test

    Bench() {
        REQUIRE(loop.open() == 0);
        hub = &space->hub(loop);
        settings.ping_ms = 0;
        settings.limits = {0, 100};
    }
    ~Bench() {
        for (int fd : clients)
            if (fd >= 0) ::close(fd);
    }
    // A subscriber of `topic`: the session (started) and its client's end.
    int subscribe(Session::Kind kind, std::string_view topic, std::uint64_t after = 0,
                  int sndbuf = 0) {
        int fd[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) == 0);
        if (sndbuf) REQUIRE(setsockopt(fd[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) == 0);
        auto* session = new Session(kind, fd[0], space, *hub, settings);
        REQUIRE(session->join(topic, after));
        session->start(nullptr);
        clients.push_back(fd[1]);
        return fd[1];
    }
    // On the loop, before it stops: the clients hang up and their sessions
    // end (a session waiting for a close past the loop's end would be left).
    void hang_up() {
        for (int& fd : clients) {
            ::close(fd);
            fd = -1;
        }
        weft::io::sleep(5);
    }
    TopicSpace::Published publish(std::string_view topic, std::string_view body) {
        TopicSpace::Published published;
        space->publish(topic, Message::make(body, true), settings.limits, hub, published);
        return published;
    }
};

} // namespace

TEST_CASE("a publish reaches each subscriber once, in order, after the history", "[pubsub]") {
    Bench bench;
    bench.settings.limits = {2, 100};
    bench.publish("t", "m0");
    bench.publish("t", "m1");
    const std::uint64_t m2 = bench.publish("t", "m2").id;
    std::vector<int> ws;
    for (int i = 0; i < 3; ++i) ws.push_back(bench.subscribe(Session::Kind::websocket, "t"));
    const int sse = bench.subscribe(Session::Kind::sse, "t");
    const int resumed = bench.subscribe(Session::Kind::sse, "t", m2);
    const int other = bench.subscribe(Session::Kind::websocket, "u");
    std::vector<std::string> got(ws.size());
    std::string sse_got, resumed_got, other_got;
    std::uint32_t counted = 0;
    bench.loop.spawn([&] {
        weft::io::sleep(5);
        counted = bench.publish("t", "m3").subscribers;
        bench.publish("t", "m4");
        weft::io::sleep(20);
        for (std::size_t i = 0; i < ws.size(); ++i) got[i] = read_now(ws[i]);
        sse_got = read_now(sse);
        resumed_got = read_now(resumed);
        other_got = read_now(other);
        bench.hang_up();
        bench.loop.stop(0ms);
    });
    bench.loop.run();
    CHECK(counted == 5);
    for (const std::string& bytes : got) {
        const std::vector<Frame> frames = frames_of(bytes);
        REQUIRE(frames.size() >= 4);
        CHECK(frames[0].payload == "m1");
        CHECK(frames[1].payload == "m2");
        CHECK(frames[2].payload == "m3");
        CHECK(frames[3].payload == "m4");
        CHECK(frames[3].opcode == 1);
    }
    CHECK(sse_got.find("data: m1\n\n") != std::string::npos);
    CHECK(sse_got.find("data: m0") == std::string::npos);
    CHECK(sse_got.find("data: m1\n\nid: ") != std::string::npos);
    CHECK(sse_got.find("data: m4\n\n") != std::string::npos);
    CHECK(resumed_got.find("m2") == std::string::npos);
    CHECK(resumed_got.find("data: m3\n\n") != std::string::npos);
    CHECK(other_got.find("m3") == std::string::npos);
}

#if !WEFT_ASAN
TEST_CASE("a delivery allocates nothing per subscriber", "[pubsub]") {
    long with_one = -1, with_fifty = -1;
    for (int round = 0; round < 2; ++round) {
        Bench bench;
        const int count = round == 0 ? 1 : 50;
        for (int i = 0; i < count; ++i) bench.subscribe(Session::Kind::websocket, "t");
        long& counted = round == 0 ? with_one : with_fifty;
        bench.loop.spawn([&] {
            weft::io::sleep(2);
            // Queues and lists reach their size (the hub's two dirty lists
            // take turns).
            for (int i = 0; i < 2; ++i) {
                bench.publish("t", "warm");
                weft::io::sleep(2);
            }
            auto message = Message::make(std::string_view("measured"), true);
            const long before = test::allocations.load();
            TopicSpace::Published published;
            bench.space->publish("t", message, bench.settings.limits, bench.hub, published);
            weft::io::sleep(2); // the flush
            counted = test::allocations.load() - before;
            for (int fd : bench.clients) read_now(fd);
            bench.hang_up();
            bench.loop.stop(0ms);
        });
        bench.loop.run();
    }
    CHECK(with_one >= 0);
    CHECK(with_fifty == with_one);
}
#endif

TEST_CASE("a subscriber that does not read is closed with 1008, the others get everything",
          "[pubsub]") {
    Bench bench;
    bench.settings.max_queued = 4096;
    const int slow = bench.subscribe(Session::Kind::websocket, "t", 0, 4096);
    const int fast = bench.subscribe(Session::Kind::websocket, "t");
    const std::string body(200, 'x');
    std::string fast_got, slow_got;
    bench.loop.spawn([&] {
        weft::io::sleep(2);
        for (int i = 0; i < 300; ++i) {
            bench.publish("t", body);
            if (i % 10 == 9) {
                weft::io::sleep(1);
                fast_got += read_now(fast);
            }
        }
        weft::io::sleep(5);
        fast_got += read_now(fast);
        // The slow one reads at last: what was queued, then the close.
        for (int i = 0; i < 20; ++i) {
            slow_got += read_now(slow);
            weft::io::sleep(2);
        }
        bench.hang_up();
        bench.loop.stop(0ms);
    });
    bench.loop.run();
    CHECK(frames_of(fast_got).size() == 300);
    const std::vector<Frame> slow_frames = frames_of(slow_got);
    REQUIRE(!slow_frames.empty());
    CHECK(slow_frames.size() < 300);
    CHECK(slow_frames.back().opcode == 8);
    CHECK(slow_frames.back().payload.substr(0, 2) == "\x03\xf0"); // 1008
}

TEST_CASE("a ping is answered, a close echoed, then the fd closes", "[pubsub]") {
    Bench bench;
    const int client = bench.subscribe(Session::Kind::websocket, "t");
    std::string got;
    bool closed = false;
    bench.loop.spawn([&] {
        const std::string out = client_frame(9, "hi") + client_frame(8, "\x03\xe8"
                                                                        "bye");
        REQUIRE(::send(client, out.data(), out.size(), 0) == static_cast<ssize_t>(out.size()));
        weft::io::sleep(20);
        got = read_now(client);
        char byte;
        closed = ::recv(client, &byte, 1, MSG_DONTWAIT) == 0;
        bench.hang_up();
        bench.loop.stop(0ms);
    });
    bench.loop.run();
    const std::vector<Frame> frames = frames_of(got);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].opcode == 0xA);
    CHECK(frames[0].payload == "hi");
    CHECK(frames[1].opcode == 8);
    CHECK(frames[1].payload == "\x03\xe8"
                               "bye"); // the code and the reason, echoed
    CHECK(closed);
    CHECK(bench.hub->sessions() == 0);
}

TEST_CASE("clients_publish: a subscriber's message goes to its topic, without, 1008", "[pubsub]") {
    Bench bench;
    bench.settings.clients_publish = true;
    bench.settings.max_message = 8;
    const int speaker = bench.subscribe(Session::Kind::websocket, "t");
    const int listener = bench.subscribe(Session::Kind::sse, "t");
    const int talker = bench.subscribe(Session::Kind::websocket, "t");
    bench.settings.clients_publish = false;
    const int muted = bench.subscribe(Session::Kind::websocket, "u");
    std::string speaker_got, listener_got, talker_got, muted_got;
    bench.loop.spawn([&] {
        weft::io::sleep(2);
        const std::string hello = client_frame(1, "hello");
        ::send(speaker, hello.data(), hello.size(), 0);
        const std::string long_one = client_frame(1, "too long!");
        ::send(talker, long_one.data(), long_one.size(), 0);
        ::send(muted, hello.data(), hello.size(), 0);
        weft::io::sleep(20);
        speaker_got = read_now(speaker);
        listener_got = read_now(listener);
        talker_got = read_now(talker);
        muted_got = read_now(muted);
        bench.hang_up();
        bench.loop.stop(0ms);
    });
    bench.loop.run();
    const std::vector<Frame> echoed = frames_of(speaker_got);
    REQUIRE(!echoed.empty());
    CHECK(echoed[0].payload == "hello");
    CHECK(listener_got.find("data: hello\n\n") != std::string::npos);
    const std::vector<Frame> talked = frames_of(talker_got);
    REQUIRE(!talked.empty());
    CHECK(talked.back().opcode == 8);
    CHECK(talked.back().payload.substr(0, 2) == "\x03\xf1"); // 1009
    const std::vector<Frame> muted_frames = frames_of(muted_got);
    REQUIRE(muted_frames.size() == 1);
    CHECK(muted_frames[0].payload.substr(0, 2) == "\x03\xf0"); // 1008
}

TEST_CASE("a loop's stop closes its subscribers with 1001, waits for their close, then ends them",
          "[pubsub]") {
    Bench bench;
    const int ws = bench.subscribe(Session::Kind::websocket, "t");
    const int sse = bench.subscribe(Session::Kind::sse, "t");
    const int mute = bench.subscribe(Session::Kind::websocket, "t"); // never answers
    std::string ws_got, sse_got;
    bool sse_ended = false;
    // The client: answers the server's close with its own.
    bench.loop.spawn([&] {
        char buffer[256];
        const ssize_t n = weft::io::read(ws, buffer, sizeof buffer);
        if (n > 0) ws_got.assign(buffer, static_cast<std::size_t>(n));
        const std::string close = client_frame(8, "\x03\xe9");
        ::send(ws, close.data(), close.size(), 0);
    });
    bench.loop.spawn([&] {
        weft::io::sleep(5);
        bench.loop.stop(1000ms);
        weft::io::sleep(1);
        sse_got = read_now(sse);
        char byte;
        sse_ended = ::recv(sse, &byte, 1, MSG_DONTWAIT) == 0;
    });
    const auto start = std::chrono::steady_clock::now();
    bench.loop.run();
    // The one that answered nothing was ended with the grace (1 s, before
    // its 2 s of waiting were over), not left open past the loop.
    CHECK(std::chrono::steady_clock::now() - start < 10s);
    const std::string muted = read_now(mute);
    char byte;
    CHECK(::recv(mute, &byte, 1, MSG_DONTWAIT) == 0);
    REQUIRE(frames_of(muted).size() == 1);
    CHECK(frames_of(muted)[0].payload.substr(0, 2) == "\x03\xe9");
    const std::vector<Frame> frames = frames_of(ws_got);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].opcode == 8);
    CHECK(frames[0].payload.substr(0, 2) == "\x03\xe9"); // 1001
    CHECK(sse_ended);
    CHECK(bench.hub->sessions() == 0);
}

TEST_CASE("publishes on two loops reach both loops' subscribers once, in id order", "[pubsub]") {
    auto space = std::make_shared<TopicSpace>();
    weft::FdTable table{4096};
    Loop one{table, 0};
    Loop two{table, 1};
    REQUIRE(one.open() == 0);
    REQUIRE(two.open() == 0);
    LoopHub& hub_one = space->hub(one);
    LoopHub& hub_two = space->hub(two);
    SessionSettings settings;
    settings.ping_ms = 0;
    settings.limits = {0, 100};
    std::vector<int> clients; // [0, 2) on loop one, [2, 4) on loop two; SSE: ids visible
    for (LoopHub* hub : {&hub_one, &hub_one, &hub_two, &hub_two}) {
        int fd[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) == 0);
        const int size = 1 << 20;
        setsockopt(fd[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
        auto* session = new Session(Session::Kind::sse, fd[0], space, *hub, settings);
        REQUIRE(session->join("t", 0));
        session->start(nullptr);
        clients.push_back(fd[1]);
    }
    constexpr int kEach = 200;
    auto publisher = [&](Loop& loop, LoopHub& hub, char tag) {
        loop.spawn([&, tag] {
            weft::io::sleep(5);
            for (int i = 0; i < kEach; ++i) {
                TopicSpace::Published published;
                space->publish("t", Message::make(std::string(1, tag) + std::to_string(i), true),
                               settings.limits, &hub, published);
                if (i % 20 == 0) weft::io::sleep(1);
            }
        });
    };
    publisher(one, hub_one, 'a');
    publisher(two, hub_two, 'b');
    std::vector<std::string> got(clients.size());
    one.spawn([&] {
        weft::io::sleep(300);
        for (std::size_t i = 0; i < clients.size(); ++i) got[i] = read_now(clients[i]);
        for (int& fd : clients) {
            ::close(fd);
            fd = -1;
        }
        weft::io::sleep(20); // both loops see the hang-ups
        two.post([&] { two.stop(0ms); });
        one.stop(0ms);
    });
    std::thread other([&] { two.run(); });
    one.run();
    other.join();
    for (const std::string& stream : got) {
        std::vector<std::uint64_t> ids;
        int a = 0, b = 0, next_a = 0, next_b = 0;
        bool in_order = true;
        for (std::size_t at = 0; (at = stream.find("id: ", at)) != std::string::npos;) {
            const std::size_t data = stream.find("\ndata: ", at);
            ids.push_back(std::stoull(stream.substr(at + 4, data - at - 4)));
            const std::string body =
                stream.substr(data + 7, stream.find('\n', data + 7) - data - 7);
            const int n = std::stoi(body.substr(1));
            if (body[0] == 'a')
                in_order &= n == next_a++, ++a;
            else
                in_order &= n == next_b++, ++b;
            at = data;
        }
        CHECK(a == kEach);
        CHECK(b == kEach);
        CHECK(in_order);
        bool increasing = true;
        for (std::size_t i = 1; i < ids.size(); ++i) increasing &= ids[i] > ids[i - 1];
        CHECK(increasing);
    }
}
