// The Exchange over a real socketpair, on a real loop: the exact bytes of its
// responses (the Date masked), and the hand-over of the connection when a
// handler switches protocols or streams to the close, alone and inside a
// Connection, for the rest of serve() or for good (a Detached).
//
// Catch2's assertions are not for coroutines: code on the loop records what it
// sees, and the test checks it after the loop has run.

#include "event_helpers.hpp"
#include "http/body_reader.hpp"
#include "http/client_socket.hpp"
#include "http/connection.hpp"
#include "http/date.hpp"
#include "http/detached.hpp"
#include "http/exchange.hpp"
#include "http/limits.hpp"
#include "http/parser.hpp"
#include "http/receive_buffer.hpp"
#include "http/router.hpp"
#include "http/server.hpp"
#include "http/session_log.hpp"
#include "loop/io.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>

using namespace weft::http;

namespace {

constexpr std::string_view kDateField = "\r\nDate: ";

// `bytes` with the Date field's value replaced by "<date>", once it was seen
// to be a date.
std::string masked(std::string bytes) {
    const std::size_t at = bytes.find(kDateField);
    if (at == std::string::npos) return bytes;
    const std::size_t value = at + kDateField.size();
    if (!parse_http_date(std::string_view(bytes).substr(value, kHttpDateLength))) return bytes;
    return bytes.replace(value, kHttpDateLength, "<date>");
}

// What is in the socket now, without waiting.
std::string drain(int fd) {
    std::string out;
    char buffer[4096];
    for (;;) {
        const ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n <= 0) break;
        out.append(buffer, static_cast<std::size_t>(n));
    }
    return out;
}

// One request, received on the server's end of a socketpair, the way a
// Connection holds it: its head (and whatever followed) in a ReceiveBuffer.
struct Wire {
    int fd[2] = {-1, -1};
    ServerOptions options;
    Router router;
    std::unique_ptr<ReceiveBuffer> in = std::make_unique<ReceiveBuffer>();
    std::unique_ptr<ClientSocket> socket;
    std::unique_ptr<BodyReader> body;
    Request request;

    explicit Wire(std::string_view received) {
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) == 0);
        socket = std::make_unique<ClientSocket>(fd[0], options.send_timeout_ms);
        body = std::make_unique<BodyReader>(*socket, *in, options);
        REQUIRE(received.size() <= ReceiveBuffer::kSize);
        received.copy(in->bytes, received.size());
        in->end = received.size();
        RequestParser parser(options.parser);
        REQUIRE(parser.parse({in->bytes, in->end}, request) == ParseStatus::done);
        body->start(request, parser.head_size());
    }
    ~Wire() {
        for (const int f : fd)
            if (f >= 0) close(f);
    }

    // Runs `respond` on an Exchange in a coroutine of a loop; what the client
    // received, the Date masked.
    std::string exchange(const std::function<void(Exchange&)>& respond) {
        test::EventLoop t;
        t.spawn([&] {
            Exchange exchange(*socket, *body, router, request, request.path);
            respond(exchange);
        });
        t.run();
        return masked(drain(fd[1]));
    }
};

} // namespace

TEST_CASE("a response to HEAD has the head a GET would have, and no body", "[http]") {
    Wire wire("HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n");
    int result = -1;
    const std::string got = wire.exchange([&](Exchange& e) {
        e.header("Content-Type", "text/plain");
        result = e.send("hello");
    });
    CHECK(result == 0);
    CHECK(got == "HTTP/1.1 200 OK\r\nServer: weft\r\nDate: <date>\r\nContent-Length: 5\r\n"
                 "Content-Type: text/plain\r\n\r\n");
}

TEST_CASE("an HTTP/1.0 response says how the connection goes on", "[http]") {
    SECTION("closed, by default") {
        Wire wire("GET /a HTTP/1.0\r\n\r\n");
        bool closing = false;
        const std::string got = wire.exchange([&](Exchange& e) {
            e.send("hello");
            closing = e.closing();
        });
        CHECK(closing);
        CHECK(got == "HTTP/1.1 200 OK\r\nServer: weft\r\nDate: <date>\r\nContent-Length: 5\r\n"
                     "Connection: close\r\n\r\nhello");
    }
    SECTION("kept alive when asked") {
        Wire wire("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        const std::string got = wire.exchange([](Exchange& e) { e.send("hello"); });
        CHECK(got == "HTTP/1.1 200 OK\r\nServer: weft\r\nDate: <date>\r\nContent-Length: 5\r\n"
                     "Connection: keep-alive\r\n\r\nhello");
    }
    SECTION("a body of unknown length is not chunked: the close ends it") {
        Wire wire("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        bool closing = false;
        const std::string got = wire.exchange([&](Exchange& e) {
            e.begin(kUnknownLength);
            e.write("hel");
            e.write("lo");
            e.finish();
            closing = e.closing();
        });
        CHECK(closing);
        CHECK(got == "HTTP/1.1 200 OK\r\nServer: weft\r\nDate: <date>\r\nConnection: close\r\n\r\n"
                     "hello");
    }
}

TEST_CASE("Content-Length is the body's length in decimal, whatever its digits", "[http]") {
    for (const std::size_t size : {0, 7, 10, 99, 100, 101, 1000, 1024, 12345, 54321}) {
        Wire wire("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
        const std::string body(size, 'b');
        const std::string got = wire.exchange([&](Exchange& e) { e.send(body); });
        INFO(size);
        CHECK(got == "HTTP/1.1 200 OK\r\nServer: weft\r\nDate: <date>\r\nContent-Length: " +
                         std::to_string(size) + "\r\n\r\n" + body);
    }
}

TEST_CASE("a body of unknown length goes in chunks to an HTTP/1.1 client", "[http]") {
    Wire wire("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    int finished = -1;
    const std::string got = wire.exchange([&](Exchange& e) {
        e.header("Content-Type", "text/plain");
        e.begin(kUnknownLength);
        e.write("hello");
        e.write("");
        e.write(" chunked world");
        finished = e.finish();
    });
    CHECK(finished == 0);
    CHECK(got == "HTTP/1.1 200 OK\r\nServer: weft\r\nDate: <date>\r\nTransfer-Encoding: chunked\r\n"
                 "Content-Type: text/plain\r\n\r\n"
                 "5\r\nhello\r\ne\r\n chunked world\r\n0\r\n\r\n");
}

TEST_CASE("write_some's chunks are framed as write's are", "[http]") {
    Wire wire("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    ssize_t taken = -1;
    const std::string got = wire.exchange([&](Exchange& e) {
        e.begin(kUnknownLength);
        taken = e.write_some("hello");
        e.finish();
    });
    CHECK(taken == 5);
    CHECK(got == "HTTP/1.1 200 OK\r\nServer: weft\r\nDate: <date>\r\nTransfer-Encoding: chunked\r\n"
                 "\r\n5\r\nhello\r\n0\r\n\r\n");
}

TEST_CASE("a 304 has its fields and neither a length nor a body", "[http]") {
    Wire wire("GET /a HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"v1\"\r\n\r\n");
    const std::string got = wire.exchange([](Exchange& e) {
        e.status(304);
        e.header("ETag", "\"v1\"");
        e.send("not sent");
    });
    CHECK(got == "HTTP/1.1 304 Not Modified\r\nServer: weft\r\nDate: <date>\r\n"
                 "ETag: \"v1\"\r\n\r\n");
}

TEST_CASE("an error page keeps the fields set before it, but those of the body it replaces",
          "[http]") {
    Wire wire("DELETE /a HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string got = wire.exchange([](Exchange& e) {
        e.header("Content-Type", "text/html");
        e.header("Allow", "GET, HEAD");
        e.header("Content-Encoding", "gzip");
        e.send_error(405);
    });
    const std::string page = "405 Method Not Allowed\n";
    CHECK(got == "HTTP/1.1 405 Method Not Allowed\r\nServer: weft\r\nDate: <date>\r\n"
                 "Content-Length: " +
                     std::to_string(page.size()) +
                     "\r\nAllow: GET, HEAD\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" +
                     page);
}

TEST_CASE("a field holding a line break fails the response with a 500", "[http]") {
    Wire wire("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string got = wire.exchange([](Exchange& e) {
        e.header("Content-Type", "text/html");
        e.header("X-Split", "a\r\nSet-Cookie: b");
        e.send("<p>hello");
    });
    const std::string page = "500 Internal Server Error\n";
    CHECK(got == "HTTP/1.1 500 Internal Server Error\r\nServer: weft\r\nDate: <date>\r\n"
                 "Content-Length: " +
                     std::to_string(page.size()) +
                     "\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + page);
}

TEST_CASE("an error once the head went out is refused, and the connection closes", "[http]") {
    Wire wire("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    int error = 0;
    bool closing = false;
    const std::string got = wire.exchange([&](Exchange& e) {
        e.begin(10);
        e.write("01234");
        error = e.send_error(500);
        closing = e.closing();
    });
    CHECK(error == -EALREADY);
    CHECK(closing);
    CHECK(got == "HTTP/1.1 200 OK\r\nServer: weft\r\nDate: <date>\r\nContent-Length: 10\r\n\r\n"
                 "01234");
}

TEST_CASE("switching protocols answers 101 and hands over the bytes read past the head", "[http]") {
    Wire wire("GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n"
              "first frame");
    int result = -1, send_after = 0;
    HandOver taken;
    std::string received;
    bool handed_over = false;
    const std::string got = wire.exchange([&](Exchange& e) {
        e.header("Sec-Check", "yes");
        result = e.switch_protocols("echo", taken);
        received = taken.received;
        handed_over = e.handed_over();
        send_after = e.send("no");
        iovec iov{const_cast<char*>("ours"), 4};
        if (taken.socket) taken.socket->send(&iov, 1);
    });
    CHECK(result == 0);
    CHECK(handed_over);
    CHECK(taken.socket == wire.socket.get());
    CHECK(received == "first frame");
    CHECK(send_after < 0);
    CHECK(got == "HTTP/1.1 101 Switching Protocols\r\nServer: weft\r\nDate: <date>\r\n"
                 "Sec-Check: yes\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\nours");
}

TEST_CASE("a protocol switch is refused, with nothing sent, when it cannot be made", "[http]") {
    int result = 0;
    HandOver taken;
    SECTION("the body is unread: its bytes would go to the new protocol") {
        Wire wire(
            "POST /chat HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nUpgrade: echo\r\n\r\nabc");
        CHECK(wire.exchange([&](Exchange& e) { result = e.switch_protocols("echo", taken); }) ==
              "");
        CHECK(result == -EBUSY);
    }
    SECTION("HTTP/1.0 has no Upgrade") {
        Wire wire("GET /chat HTTP/1.0\r\nUpgrade: echo\r\n\r\n");
        CHECK(wire.exchange([&](Exchange& e) { result = e.switch_protocols("echo", taken); }) ==
              "");
        CHECK(result == -EPROTO);
    }
    SECTION("a response went out already") {
        Wire wire("GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\n\r\n");
        const std::string got = wire.exchange([&](Exchange& e) {
            e.send("");
            result = e.switch_protocols("echo", taken);
        });
        CHECK(got.starts_with("HTTP/1.1 200 OK\r\n"));
        CHECK(result == -EALREADY);
    }
    CHECK(taken.socket == nullptr);
}

namespace {

class TestHandler : public Handler {
public:
    explicit TestHandler(std::function<void(Exchange&)> serve)
        : Handler("/"), serve_(std::move(serve)) {}
    void serve(Exchange& exchange) const override { serve_(exchange); }
    std::string describe() const override { return "test"; }

private:
    std::function<void(Exchange&)> serve_;
};

} // namespace

TEST_CASE("a handler that switches protocols owns the socket until it returns, then the loop "
          "closes it",
          "[http]") {
    // The request comes with a first frame and what looks like a request:
    // both are the handler's. After the handler returns, the Connection
    // neither reads nor answers what the client sends next (it would be
    // another request for the same handler, another 101).
    std::string received, client_got, error;
    int switched = 0;
    Server server;
    Router::Site site;
    site.handlers.push_back(std::make_unique<TestHandler>([&](Exchange& e) {
        HandOver taken;
        if (e.switch_protocols("echo", taken) != 0) return;
        ++switched;
        received = taken.received;
        std::string reply = "[" + received + "]";
        iovec iov{reply.data(), reply.size()};
        if (taken.socket->send(&iov, 1) != 0) error = "send";
        char buffer[256];
        const ssize_t n = taken.socket->receive(buffer, sizeof buffer, 5'000);
        if (n <= 0) error = "receive";
        iovec echo{buffer, static_cast<std::size_t>(n > 0 ? n : 0)};
        taken.socket->send(&echo, 1);
    }));
    server.router.add_site(std::move(site));

    int fd[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) == 0);
    test::EventLoop t;
    const std::uint16_t handler =
        t.loop.add_handler([&server](int client) { return serve_connection(client, server); });
    int adopted = -1;
    t.loop.post([&] { adopted = t.loop.adopt(fd[0], handler); }); // on the loop, as accept does
    const std::string first = "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\n"
                              "Connection: Upgrade\r\n\r\nhello;GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::string again = "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\n\r\n";
    t.spawn([&] {
        // Reads until what came ends with `tail`, or the socket does.
        const auto read_until = [&](std::string_view tail) {
            char buffer[1024];
            while (!client_got.ends_with(tail)) {
                const ssize_t n = weft::io::read(fd[1], buffer, sizeof buffer);
                if (n <= 0) return;
                client_got.append(buffer, static_cast<std::size_t>(n));
            }
        };
        weft::io::write(fd[1], first.data(), first.size());
        read_until("]");
        weft::io::write(fd[1], "ping", 4);
        read_until("ping");
        // The handler has returned: its coroutine ended and the loop closed
        // the socket at once (a write may find it closed).
        weft::io::write(fd[1], again.data(), again.size());
        read_until("never");
        weft::io::close(fd[1]);
        t.loop.stop(std::chrono::seconds(20)); // the loop ends when no task is left
    });
    t.loop.run(); // not stopping meanwhile: a stopping loop closes after any answer
    CHECK(adopted == 0);
    CHECK(error == "");
    CHECK(switched == 1);
    CHECK(received == "hello;GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(masked(client_got) == "HTTP/1.1 101 Switching Protocols\r\nServer: weft\r\n"
                                "Date: <date>\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\n"
                                "[hello;GET / HTTP/1.1\r\nHost: x\r\n\r\n]ping");
    errno = 0;
    CHECK(fcntl(fd[0], F_GETFD) == -1);
    CHECK(errno == EBADF);
}

TEST_CASE("a protocol switch hands over every byte after the request, empty lines too", "[http]") {
    // CRLFs after a request are no next request, but after a 101 they are
    // the new protocol's: none may be dropped.
    HandOver taken;
    int result = -1;
    std::string received;
    SECTION("after a head") {
        Wire wire("GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\n\r\n\r\n\r\nframe");
        wire.exchange([&](Exchange& e) {
            result = e.switch_protocols("echo", taken);
            received = taken.received;
        });
        CHECK(received == "\r\n\r\nframe");
    }
    SECTION("after a chunked body read to its end") {
        Wire wire("POST /chat HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                  "Upgrade: echo\r\n\r\n3\r\nabc\r\n0\r\n\r\n\r\nframe");
        wire.exchange([&](Exchange& e) {
            char body[16];
            while (e.read_body(body, sizeof body) > 0) {
            }
            result = e.switch_protocols("echo", taken);
            received = taken.received;
        });
        CHECK(received == "\r\nframe");
    }
    CHECK(result == 0);
}

TEST_CASE("a stream to the close sends a head without length or chunks, then hands over",
          "[http]") {
    Wire wire("GET /live/news HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\nextra");
    int result = -1, send_after = 0;
    HandOver taken;
    std::string received;
    bool handed_over = false;
    const std::string got = wire.exchange([&](Exchange& e) {
        e.header("Content-Type", "text/event-stream");
        result = e.stream_to_close(taken);
        received = taken.received;
        handed_over = e.handed_over();
        send_after = e.send("no");
        iovec iov{const_cast<char*>("data: 1\n\n"), 9};
        if (taken.socket) taken.socket->send(&iov, 1);
    });
    CHECK(result == 0);
    CHECK(handed_over);
    CHECK(taken.socket == wire.socket.get());
    CHECK(received == "extra");
    CHECK(send_after < 0);
    CHECK(got == "HTTP/1.1 200 OK\r\nServer: weft\r\nDate: <date>\r\n"
                 "Content-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: 1\n\n");
}

TEST_CASE("a stream to the close is refused, with nothing sent, when it cannot be made", "[http]") {
    int result = 0;
    HandOver taken;
    SECTION("HEAD: a head alone would promise a stream that never comes") {
        Wire wire("HEAD /live HTTP/1.1\r\nHost: x\r\n\r\n");
        CHECK(wire.exchange([&](Exchange& e) { result = e.stream_to_close(taken); }) == "");
        CHECK(result == -EPROTO);
    }
    SECTION("POST") {
        Wire wire("POST /live HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
        CHECK(wire.exchange([&](Exchange& e) { result = e.stream_to_close(taken); }) == "");
        CHECK(result == -EPROTO);
    }
    SECTION("a response went out already") {
        Wire wire("GET /live HTTP/1.1\r\nHost: x\r\n\r\n");
        const std::string got = wire.exchange([&](Exchange& e) {
            e.send("");
            result = e.stream_to_close(taken);
        });
        CHECK(got.starts_with("HTTP/1.1 200 OK\r\n"));
        CHECK(result == -EALREADY);
    }
    CHECK(taken.socket == nullptr);
}

namespace {

// What a DetachedEcho did, for the test to check after the loop ran.
struct EchoRecord {
    int starts = 0;
    bool had_log = false;
    bool deleted = false;
    std::string got;
    std::size_t live_tasks_at_first_call = 99;
};

// A session served by loop callbacks alone: echoes "[bytes]" for each batch
// it reads, logs and closes at the client's EOF.
class DetachedEcho final : public Detached, public weft::FdWatcher {
public:
    DetachedEcho(int fd, std::string received, EchoRecord& record)
        : weft::FdWatcher{on_ready}, fd_(fd), pending_(std::move(received)), record_(record) {}
    ~DetachedEcho() override { record_.deleted = true; }

    void keep(std::unique_ptr<LimitHold>) override {}
    void start(std::unique_ptr<SessionLog> log) override {
        ++record_.starts;
        record_.had_log = log != nullptr;
        log_ = std::move(log);
        if (weft::Loop::current()->watch_fd(fd_, *this, weft::kReadable | weft::kWritable) != 0)
            delete this; // the loop closes the fd
    }

private:
    static void on_ready(weft::FdWatcher& self, std::uint8_t) {
        auto& s = static_cast<DetachedEcho&>(self);
        weft::Loop& loop = *weft::Loop::current();
        if (s.record_.got.empty() && s.sent_ == 0)
            s.record_.live_tasks_at_first_call = loop.live_tasks();
        std::string batch = std::exchange(s.pending_, {});
        char buffer[256];
        ssize_t n;
        while ((n = weft::io::recv_now(s.fd_, buffer, sizeof buffer)) > 0)
            batch.append(buffer, static_cast<std::size_t>(n));
        if (!batch.empty()) {
            s.record_.got += batch;
            const std::string reply = "[" + batch + "]";
            const ssize_t sent = weft::io::send_now(s.fd_, reply.data(), reply.size());
            if (sent > 0) s.sent_ += static_cast<std::uint64_t>(sent);
        }
        if (n != 0) return; // not the end yet
        if (s.log_) s.log_->write(101, s.sent_, "echo closed by client");
        loop.close_fd(s.fd_);
        delete &s;
    }

    int fd_;
    std::string pending_;
    EchoRecord& record_;
    std::unique_ptr<SessionLog> log_;
    std::uint64_t sent_ = 0;
};

class CountedDetached final : public Detached {
public:
    explicit CountedDetached(bool& deleted) : deleted_(deleted) {}
    ~CountedDetached() override { deleted_ = true; }
    void start(std::unique_ptr<SessionLog>) override {}
    void keep(std::unique_ptr<LimitHold>) override {}

private:
    bool& deleted_;
};

} // namespace

TEST_CASE("a session is taken only after a hand-over", "[http]") {
    Wire wire("GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\n\r\n");
    bool first_deleted = false, second_deleted = false, third_deleted = false;
    int before = 0, after = -1, again = 0;
    Detached* taken_back = nullptr;
    wire.exchange([&](Exchange& e) {
        before = e.detach(new CountedDetached(first_deleted));
        HandOver taken;
        e.switch_protocols("echo", taken);
        after = e.detach(new CountedDetached(second_deleted));
        again = e.detach(new CountedDetached(third_deleted));
        taken_back = e.take_detached();
    });
    CHECK(before == -EPROTO);
    CHECK(first_deleted);
    CHECK(after == 0);
    CHECK_FALSE(second_deleted);
    CHECK(again == -EPROTO);
    CHECK(third_deleted);
    REQUIRE(taken_back);
    delete taken_back;
    CHECK(second_deleted);
}

TEST_CASE("a handler that detaches leaves the connection open to its session, which logs "
          "its end",
          "[http]") {
    // The Connection counts the request and writes no line for it; the
    // session, served by loop callbacks once the coroutine has ended, gets
    // the bytes the client sent with its request, then what comes later,
    // and writes the line with its note when the client closes.
    TempDir dir;
    const std::string log_path = (dir.path / "access.log").string();
    std::string error;
    EchoRecord record;
    int detach_result = -1;
    Server server;
    server.access_log = std::make_shared<AccessLog>(log_path, error);
    REQUIRE(server.access_log->ok());
    Router::Site site;
    site.handlers.push_back(std::make_unique<TestHandler>([&](Exchange& e) {
        HandOver taken;
        if (e.switch_protocols("echo", taken) != 0) return;
        detach_result =
            e.detach(new DetachedEcho(taken.socket->fd(), std::string(taken.received), record));
    }));
    server.router.add_site(std::move(site));

    int fd[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) == 0);
    test::EventLoop t;
    const std::uint16_t handler =
        t.loop.add_handler([&server](int client) { return serve_connection(client, server); });
    t.loop.post([&] { t.loop.adopt(fd[0], handler); });
    std::string client_got;
    t.spawn([&] {
        const auto read_until = [&](std::string_view tail) {
            char buffer[1024];
            while (!client_got.ends_with(tail)) {
                const ssize_t n = weft::io::read(fd[1], buffer, sizeof buffer);
                if (n <= 0) return;
                client_got.append(buffer, static_cast<std::size_t>(n));
            }
        };
        const std::string request = "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\n"
                                    "Connection: Upgrade\r\nUser-Agent: tester\r\n\r\nhello";
        weft::io::write(fd[1], request.data(), request.size());
        read_until("[hello]");
        weft::io::write(fd[1], "again", 5);
        read_until("[again]");
        ::shutdown(fd[1], SHUT_WR);
        read_until("never"); // to the close
        weft::io::close(fd[1]);
        t.loop.stop(std::chrono::seconds(20));
    });
    t.spawn([&] {
        weft::io::sleep(5'000); // a session that never answers must not hang the test
        ::shutdown(fd[1], SHUT_RDWR);
    });
    t.loop.run();
    server.access_log->flush_this_thread();
    CHECK(detach_result == 0);
    CHECK(record.starts == 1);
    CHECK(record.had_log);
    CHECK(record.deleted);
    CHECK(record.got == "helloagain");
    CHECK(record.live_tasks_at_first_call == 2); // the connection's coroutine has ended
    CHECK(masked(client_got) == "HTTP/1.1 101 Switching Protocols\r\nServer: weft\r\n"
                                "Date: <date>\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\n"
                                "[hello][again]");
    const weft::LoopCounters& counters = t.loop.counters();
    CHECK(counters.requests_started.load() == 1);
    CHECK(counters.by_status[101].load() == 1);
    CHECK(counters.closed.load() == 1);
    errno = 0;
    CHECK(fcntl(fd[0], F_GETFD) == -1); // before the log's file takes the number
    CHECK(errno == EBADF);
    std::ifstream in(log_path);
    std::string line, lines;
    int count = 0;
    while (std::getline(in, line)) {
        ++count;
        lines += line;
    }
    CHECK(count == 1);
    CHECK(lines.find("\"GET /chat HTTP/1.1\" 101 14 \"-\" \"tester\" \"echo closed by client\"") !=
          std::string::npos);
}
