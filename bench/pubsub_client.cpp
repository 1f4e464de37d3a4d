// A pub/sub load generator for bench/pubsub.sh: N subscribers on one topic
// (WebSocket or Server-Sent Events) and one publisher that POSTs to it at a
// fixed rate, every delivery timed. One thread, one epoll.
//
//   pubsub_client --port P --path /live/bench --subscribers N --kind ws|sse
//                 --rate R --seconds T [--size B] [--batch K] [--drain S]
//                 [--timeout S] [--pause]
//
// 1. Subscribes N connections, at most K handshakes in flight (default 200):
//    ws: a real RFC 6455 handshake (a random key per connection, the
//    server's Sec-WebSocket-Accept checked), frames read unmasked, pongs and
//    the close sent masked; sse: a GET with Accept: text/event-stream, the
//    stream read as EventSource does (`data:` lines, events at blank lines,
//    comments skipped; chunked or not).
// 2. Publishes "ready" every 100 ms until every subscriber has received one:
//    only then is each surely subscribed (a server may answer the handshake
//    before the subscription takes effect). Prints "ready subscribers=N".
// 3. With --pause, waits for a line on stdin (bench/pubsub.sh reads the
//    server's RSS and CPU time here).
// 4. Publishes R*T messages, one every 1/R s, on one keep-alive connection,
//    each sent when due whether or not the previous one was answered
//    (pipelined: the offered load stays R/s whatever the server does). Each
//    body is "SEQ SENT_NS" (CLOCK_MONOTONIC) padded with 'x' to B bytes
//    (default 64). Each subscriber times every message (now - SENT_NS) and
//    checks the order (SEQ must grow).
// 5. Waits until every subscriber has the last message and every POST is
//    answered, or S seconds (default 10) after the last POST, then prints
//      done published=P answered=A subscribers=N expected=E delivered=D
//           lost=L out_of_order=O closed=C p50_us=.. p99_us=.. max_us=..
//           publish_p99_us=.. seconds=.. client_cpu_s=..
//    lost = E - D with E = N*P; closed = subscribers the server closed.
// 6. With --pause, waits for another line before it closes the subscribers.
//
// Exits 1 (with a reason) on any protocol error; SIGALRM ends it after
// --timeout seconds (default 300).

#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "client.hpp"
#include "stats.hpp"
#include "util/base64.hpp"
#include "util/sha1.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Ns = std::int64_t;

Ns now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return Ns(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

enum class Kind { ws, sse };

struct Settings {
    long port = 0;
    std::string path = "/live/bench";
    long subscribers = 100;
    Kind kind = Kind::ws;
    long rate = 100;
    long seconds = 10;
    long size = 64;
    long batch = 200;
    long drain = 10;
    long timeout = 300;
    bool pause = false;
};

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char* format, ...) {
    std::fputs("pubsub_client: ", stderr);
    va_list args;
    va_start(args, format);
    std::vfprintf(stderr, format, args);
    va_end(args);
    std::fputc('\n', stderr);
    std::exit(1);
}

// The value of header `name` in `head` (a response head), or "" without it.
std::string_view header(std::string_view head, std::string_view name) {
    for (auto at = head.find("\r\n"); at != std::string_view::npos && at + 4 <= head.size();) {
        const auto next = head.find("\r\n", at + 2);
        const auto line = head.substr(at + 2, next - at - 2);
        at = next;
        const auto colon = line.find(':');
        if (colon == std::string_view::npos || !bench::equal_nocase(line.substr(0, colon), name))
            continue;
        auto value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
            value.remove_suffix(1);
        return value;
    }
    return {};
}

int status_of(std::string_view head) {
    if (head.size() < 12 || head.substr(0, 7) != "HTTP/1.") return 0;
    return std::atoi(std::string(head.substr(9, 3)).c_str());
}

std::string_view first_line(std::string_view head) {
    return head.substr(0, head.find('\r'));
}

// Digits at the front of `text` (consumed), or -1 without any.
long long take_number(std::string_view& text) {
    long long n = 0;
    std::size_t i = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) n = n * 10 + (text[i] - '0');
    if (i == 0) return -1;
    text.remove_prefix(i);
    return n;
}

int connect_to(long port) {
    return bench::connect_loopback(port, "pubsub_client");
}

void send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            // Only small control frames and requests go this way, and a full
            // socket buffer means the server stopped reading: wait for room.
            usleep(1000);
            continue;
        }
        if (n <= 0) fail("send: %s", std::strerror(errno));
        bytes.remove_prefix(std::size_t(n));
    }
}

// A client frame (RFC 6455 §5.2: FIN, the opcode, masked with a fresh key);
// control frames only, so the payload is under 126 bytes.
std::string client_frame(int opcode, std::string_view payload, std::mt19937_64& random) {
    std::string frame;
    frame += char(0x80 | opcode);
    frame += char(0x80 | payload.size());
    const auto key = std::uint32_t(random());
    char mask[4];
    std::memcpy(mask, &key, 4);
    frame.append(mask, 4);
    for (std::size_t i = 0; i < payload.size(); ++i) frame += char(payload[i] ^ mask[i % 4]);
    return frame;
}

struct Subscriber {
    int fd = -1;
    enum class State : std::uint8_t { handshake, open, closed } state = State::handshake;
    bool ready = false;
    bool chunked = false; // an SSE body in chunked coding
    long chunk_left = -1; // chunked: -1 reading a size line, -2 the CRLF after data
    std::uint64_t last_seq = 0;
    std::array<char, 28> accept{}; // the Sec-WebSocket-Accept due
    std::string in;                // received bytes not yet parsed
    std::string body;              // SSE, chunked: decoded bytes not yet parsed
    std::string data;              // SSE: the data of the event in progress
    bool has_data = false;
};

class Bench {
public:
    explicit Bench(const Settings& s) : s_(s), subs_(std::size_t(s.subscribers)) {
        latency_.reserve(std::size_t(s.subscribers * s.rate * s.seconds));
        ep_ = epoll_create1(EPOLL_CLOEXEC);
        timer_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        add(timer_, kTimer);
        if (s.pause) {
            set_nonblocking(0);
            add(0, kStdin);
        }
        host_ = "127.0.0.1:" + std::to_string(s.port);
    }

    void run() {
        alarm(unsigned(s_.timeout));
        const Ns start = now_ns();
        subscribe_all();
        std::fprintf(stderr, "pubsub_client: %ld subscribed in %.2f s\n", s_.subscribers,
                     double(now_ns() - start) / 1e9);
        publisher_ = connect_to(s_.port);
        set_nonblocking(publisher_);
        add(publisher_, kPublisher);
        wait_ready();
        std::fprintf(stderr, "pubsub_client: all ready in %.2f s\n",
                     double(now_ns() - start) / 1e9);
        std::printf("ready subscribers=%ld\n", s_.subscribers);
        std::fflush(stdout);
        if (s_.pause) wait_line();
        const Ns t0 = now_ns();
        const double cpu0 = cpu_seconds();
        publish_all();
        drain();
        const double seconds = double(now_ns() - t0) / 1e9;
        report(seconds, cpu_seconds() - cpu0);
        if (s_.pause) wait_line();
        close_all();
    }

private:
    static constexpr std::uint64_t kTimer = ~0ull, kPublisher = ~0ull - 1, kStdin = ~0ull - 2;
    enum class Phase { subscribe, ready, timed };

    void add(int fd, std::uint64_t tag) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = tag;
        if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0)
            fail("epoll_ctl: %s", std::strerror(errno));
    }
    static void set_nonblocking(int fd, int on = 1) {
        if (ioctl(fd, FIONBIO, &on) != 0) fail("FIONBIO: %s", std::strerror(errno));
    }

    void arm_timer(Ns interval) {
        itimerspec t{};
        t.it_interval.tv_sec = interval / 1'000'000'000;
        t.it_interval.tv_nsec = interval % 1'000'000'000;
        t.it_value = t.it_interval;
        timerfd_settime(timer_, 0, &t, nullptr);
    }
    std::uint64_t timer_expirations() {
        std::uint64_t n = 0;
        if (read(timer_, &n, sizeof n) != sizeof n) return 0;
        return n;
    }

    // One round of epoll; returns the timer's expirations.
    std::uint64_t poll_once(int timeout_ms) {
        epoll_event events[256];
        const int n = epoll_wait(ep_, events, 256, timeout_ms);
        if (n < 0 && errno != EINTR) fail("epoll_wait: %s", std::strerror(errno));
        std::uint64_t ticks = 0;
        const Ns now = now_ns();
        for (int i = 0; i < n; ++i) {
            const auto tag = events[i].data.u64;
            if (tag == kTimer) {
                ticks += timer_expirations();
            } else if (tag == kPublisher) {
                on_publisher_readable(now);
            } else if (tag == kStdin) {
                read_stdin();
            } else {
                on_subscriber_readable(subs_[tag], now);
            }
        }
        return ticks;
    }

    void read_stdin() {
        char buffer[256];
        const ssize_t r = read(0, buffer, sizeof buffer);
        if (r == 0) fail("stdin closed during --pause");
        if (r > 0) lines_ += std::count(buffer, buffer + r, '\n');
    }
    void wait_line() {
        while (lines_ == 0) poll_once(-1);
        --lines_;
    }

    // --- 1. subscribing ---------------------------------------------------------------

    void subscribe_all() {
        std::size_t next = 0;
        while (subscribed_ + closed_ < s_.subscribers) {
            while (next < subs_.size() && long(next) - subscribed_ - closed_ < s_.batch)
                open(next++);
            poll_once(1000);
        }
        if (closed_ > 0) fail("the server closed %ld subscribers during the handshake", closed_);
    }

    void open(std::size_t i) {
        Subscriber& sub = subs_[i];
        sub.fd = connect_to(s_.port);
        std::string request = "GET " + s_.path + " HTTP/1.1\r\nHost: " + host_ + "\r\n";
        if (s_.kind == Kind::ws) {
            char key_bytes[16];
            for (char& b : key_bytes) b = char(random_());
            const std::string key = weft::base64::encode(std::string_view(key_bytes, 16));
            const auto digest = weft::Sha1::of(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
            weft::base64::encode(
                std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()),
                sub.accept.data());
            request += "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
                       "\r\nSec-WebSocket-Version: 13\r\n\r\n";
        } else {
            request += "Accept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
        }
        send_all(sub.fd, request);
        set_nonblocking(sub.fd);
        add(sub.fd, i);
    }

    // --- 2. everyone subscribed ---------------------------------------------------------

    void wait_ready() {
        phase_ = Phase::ready;
        arm_timer(100'000'000);
        post("ready");
        while (ready_ + closed_ < s_.subscribers)
            if (poll_once(-1) > 0) post("ready");
        if (closed_ > 0)
            fail("the server closed %ld subscribers before the first message", closed_);
        arm_timer(0);
        timer_expirations();
        // The "ready" POSTs still unanswered are not timed ones.
        untimed_answers_due_ = long(sent_at_.size());
        sent_at_.clear();
    }

    // --- 4. the timed publishes -----------------------------------------------------------

    void publish_all() {
        phase_ = Phase::timed;
        const long total = s_.rate * s_.seconds;
        arm_timer(1'000'000'000 / s_.rate);
        std::string body;
        while (published_ < total) {
            const auto ticks = poll_once(-1);
            for (std::uint64_t t = 0; t < ticks && published_ < total; ++t) {
                const long seq = ++published_;
                body = std::to_string(seq) + ' ' + std::to_string(now_ns());
                if (long(body.size()) < s_.size)
                    body.append(std::size_t(s_.size) - body.size(), 'x');
                post(body);
            }
        }
    }

    // --- 5. the last deliveries -------------------------------------------------------------

    void drain() {
        arm_timer(10'000'000);
        const Ns deadline = now_ns() + Ns(s_.drain) * 1'000'000'000;
        while (now_ns() < deadline) {
            if (poll_once(-1) == 0) continue;
            if (answered_ < published_) continue;
            const bool all = std::all_of(subs_.begin(), subs_.end(), [&](const Subscriber& sub) {
                return sub.state == Subscriber::State::closed ||
                       sub.last_seq == std::uint64_t(published_);
            });
            if (all) break;
        }
        arm_timer(0);
    }

    static double cpu_seconds() {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
               double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
    }

    void report(double seconds, double cpu) {
        const long expected = s_.subscribers * published_;
        std::sort(latency_.begin(), latency_.end());
        std::sort(publish_latency_.begin(), publish_latency_.end());
        std::printf("done published=%ld answered=%ld subscribers=%ld expected=%ld delivered=%ld "
                    "lost=%ld out_of_order=%ld closed=%ld p50_us=%.0f p99_us=%.0f max_us=%.0f "
                    "publish_p99_us=%.0f seconds=%.3f client_cpu_s=%.2f\n",
                    published_, answered_, s_.subscribers, expected, delivered_,
                    expected - delivered_, out_of_order_, closed_, percentile(latency_, 0.50),
                    percentile(latency_, 0.99),
                    latency_.empty() ? 0.0 : double(latency_.back()) / 1e3,
                    percentile(publish_latency_, 0.99), seconds, cpu);
        std::fflush(stdout);
    }

    static double percentile(const std::vector<Ns>& sorted, double q) {
        if (sorted.empty()) return 0;
        const auto rank = std::size_t(std::max(1.0, double(sorted.size()) * q + 0.999999)) - 1;
        return double(sorted[std::min(rank, sorted.size() - 1)]) / 1e3;
    }

    void close_all() {
        const std::string close_frame = client_frame(0x8, std::string_view("\x03\xe8", 2), random_);
        for (Subscriber& sub : subs_) {
            if (sub.state == Subscriber::State::closed) continue;
            if (s_.kind == Kind::ws) [[maybe_unused]]
                auto _ = send(sub.fd, close_frame.data(), close_frame.size(), MSG_NOSIGNAL);
            close(sub.fd);
        }
        close(publisher_);
    }

    // --- the publisher ----------------------------------------------------------------------

    void post(std::string_view body) {
        std::string request =
            "POST " + s_.path + " HTTP/1.1\r\nHost: " + host_ +
            "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\n\r\n";
        request += body;
        sent_at_.push_back(now_ns());
        set_nonblocking(publisher_, 0);
        send_all(publisher_, request);
        set_nonblocking(publisher_, 1);
    }

    void on_publisher_readable(Ns now) {
        char buffer[16384];
        const ssize_t r = recv(publisher_, buffer, sizeof buffer, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (r <= 0) fail("the server closed the publisher's connection");
        answers_.append(buffer, std::size_t(r));
        for (;;) {
            const auto end = answers_.find("\r\n\r\n");
            if (end == std::string::npos) return;
            const std::string_view head(answers_.data(), end + 4);
            const int status = status_of(head);
            if (status < 200 || status > 299)
                fail("a publish answered '%.*s'", int(first_line(head).size()),
                     first_line(head).data());
            auto length_text = header(head, "content-length");
            const long long length = take_number(length_text);
            if (length < 0) fail("a publish answer without Content-Length");
            if (answers_.size() < end + 4 + std::size_t(length)) return;
            answers_.erase(0, end + 4 + std::size_t(length));
            if (untimed_answers_due_ > 0) {
                --untimed_answers_due_;
            } else if (phase_ == Phase::timed) {
                publish_latency_.push_back(now - sent_at_.front());
                sent_at_.pop_front();
                ++answered_;
            } else {
                sent_at_.pop_front();
            }
        }
    }

    // --- the subscribers -----------------------------------------------------------------------

    void on_subscriber_readable(Subscriber& sub, Ns now) {
        static char buffer[256 * 1024];
        const ssize_t r = recv(sub.fd, buffer, sizeof buffer, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (r <= 0) return lose(sub);
        std::string_view bytes(buffer, std::size_t(r));
        if (sub.state == Subscriber::State::handshake) {
            sub.in.append(bytes);
            const auto end = sub.in.find("\r\n\r\n");
            if (end == std::string::npos) {
                if (sub.in.size() > 65536) fail("a handshake answer over 64 KiB");
                return;
            }
            handshake_done(sub, std::string_view(sub.in).substr(0, end + 4));
            sub.in.erase(0, end + 4);
            bytes = {};
        }
        if (sub.state != Subscriber::State::open) return;
        // Parse straight from the buffer when nothing is left over (the
        // common case); otherwise from what is kept.
        if (sub.in.empty()) {
            const std::size_t used = consume(sub, bytes, now);
            if (sub.state == Subscriber::State::open) sub.in.assign(bytes.substr(used));
        } else {
            sub.in.append(bytes);
            const std::size_t used = consume(sub, sub.in, now);
            if (sub.state == Subscriber::State::open) sub.in.erase(0, used);
        }
    }

    void handshake_done(Subscriber& sub, std::string_view head) {
        const int status = status_of(head);
        if (s_.kind == Kind::ws) {
            if (status != 101)
                fail("a WebSocket handshake answered '%.*s'", int(first_line(head).size()),
                     first_line(head).data());
            const auto accept = header(head, "sec-websocket-accept");
            if (accept != std::string_view(sub.accept.data(), sub.accept.size()))
                fail("Sec-WebSocket-Accept '%.*s', not the one due", int(accept.size()),
                     accept.data());
        } else {
            if (status != 200)
                fail("an SSE subscribe answered '%.*s'", int(first_line(head).size()),
                     first_line(head).data());
            const auto type = header(head, "content-type");
            if (!bench::equal_nocase(type.substr(0, 17), "text/event-stream"))
                fail("an SSE stream of type '%.*s'", int(type.size()), type.data());
            sub.chunked = bench::equal_nocase(header(head, "transfer-encoding"), "chunked");
        }
        sub.state = Subscriber::State::open;
        ++subscribed_;
    }

    void lose(Subscriber& sub) {
        if (sub.state == Subscriber::State::closed) return;
        if (sub.state == Subscriber::State::handshake)
            fail("the server closed a connection during the handshake");
        epoll_ctl(ep_, EPOLL_CTL_DEL, sub.fd, nullptr);
        close(sub.fd);
        sub.state = Subscriber::State::closed;
        ++closed_;
        if (closed_ == 1) std::fprintf(stderr, "pubsub_client: the server closed a subscriber\n");
    }

    // Parses whole frames or events from `bytes`; returns how many bytes it used.
    std::size_t consume(Subscriber& sub, std::string_view bytes, Ns now) {
        return s_.kind == Kind::ws ? consume_frames(sub, bytes, now)
                                   : consume_stream(sub, bytes, now);
    }

    std::size_t consume_frames(Subscriber& sub, std::string_view b, Ns now) {
        std::size_t at = 0;
        while (b.size() - at >= 2) {
            const auto b0 = std::uint8_t(b[at]), b1 = std::uint8_t(b[at + 1]);
            if (b1 & 0x80) fail("a masked frame from the server");
            std::uint64_t length = b1 & 0x7f;
            std::size_t head = 2;
            if (length == 126) {
                if (b.size() - at < 4) break;
                length = std::uint64_t(std::uint8_t(b[at + 2])) << 8 | std::uint8_t(b[at + 3]);
                head = 4;
            } else if (length == 127) {
                if (b.size() - at < 10) break;
                length = 0;
                for (int i = 0; i < 8; ++i) length = length << 8 | std::uint8_t(b[at + 2 + i]);
                head = 10;
            }
            if (b.size() - at < head + length) break;
            const auto payload = b.substr(at + head, length);
            at += head + length;
            switch (b0 & 0x0f) {
            case 0x1:
            case 0x2:
                if (!(b0 & 0x80)) fail("a fragmented message (not expected at these sizes)");
                on_message(sub, payload, now);
                break;
            case 0x9: {
                const auto pong = client_frame(0xA, payload, random_);
                send_all(sub.fd, pong);
                break;
            }
            case 0xA:
                break;
            case 0x8:
                lose(sub);
                return at;
            default:
                fail("a frame with opcode %d", b0 & 0x0f);
            }
        }
        return at;
    }

    // SSE: the body, dechunked when it is chunked, then its events.
    std::size_t consume_stream(Subscriber& sub, std::string_view b, Ns now) {
        if (!sub.chunked) return consume_events(sub, b, now);
        std::size_t at = 0;
        while (at < b.size()) {
            if (sub.chunk_left == -1) {
                const auto eol = b.find("\r\n", at);
                if (eol == std::string_view::npos) break;
                auto size_text = b.substr(at, eol - at);
                long size = 0;
                for (char c : size_text.substr(0, size_text.find(';'))) {
                    const int digit = c >= '0' && c <= '9'   ? c - '0'
                                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                             : -1;
                    if (digit < 0) fail("a bad chunk size");
                    size = size * 16 + digit;
                }
                at = eol + 2;
                if (size == 0) {
                    lose(sub);
                    return at;
                }
                sub.chunk_left = size;
            } else if (sub.chunk_left == -2) {
                if (b.size() - at < 2) break;
                if (b.substr(at, 2) != "\r\n") fail("no CRLF after a chunk");
                at += 2;
                sub.chunk_left = -1;
            } else {
                const auto take = std::min<std::size_t>(std::size_t(sub.chunk_left), b.size() - at);
                sub.body.append(b.substr(at, take));
                at += take;
                sub.chunk_left -= long(take);
                if (sub.chunk_left == 0) sub.chunk_left = -2;
            }
        }
        const std::size_t used = consume_events(sub, sub.body, now);
        if (sub.state == Subscriber::State::open) sub.body.erase(0, used);
        return at;
    }

    // Whole lines only (LF or CRLF); an event ends at an empty line.
    std::size_t consume_events(Subscriber& sub, std::string_view b, Ns now) {
        std::size_t at = 0;
        for (;;) {
            const auto eol = b.find('\n', at);
            if (eol == std::string_view::npos) break;
            auto line = b.substr(at, eol - at);
            at = eol + 1;
            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
            if (line.empty()) {
                if (sub.has_data) on_message(sub, sub.data, now);
                sub.data.clear();
                sub.has_data = false;
                continue;
            }
            if (line.front() == ':') continue; // a comment: a keep-alive
            const auto colon = line.find(':');
            const auto field = line.substr(0, colon);
            auto value =
                colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
            if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
            if (field == "data") {
                if (sub.has_data) sub.data += '\n';
                sub.data.append(value);
                sub.has_data = true;
            }
        }
        return at;
    }

    void on_message(Subscriber& sub, std::string_view text, Ns now) {
        if (text == "ready") {
            if (!sub.ready) ++ready_;
            sub.ready = true;
            return;
        }
        auto rest = text;
        const long long seq = take_number(rest);
        if (seq <= 0 || rest.empty() || rest.front() != ' ')
            fail("a message that is not 'SEQ NS': '%.*s'",
                 int(std::min<std::size_t>(text.size(), 80)), text.data());
        rest.remove_prefix(1);
        const long long sent = take_number(rest);
        if (sent < 0) fail("a message without its send time");
        latency_.push_back(now - sent);
        ++delivered_;
        if (std::uint64_t(seq) <= sub.last_seq)
            ++out_of_order_;
        else
            sub.last_seq = std::uint64_t(seq);
    }

    const Settings& s_;
    std::vector<Subscriber> subs_;
    std::string host_;
    int ep_ = -1;
    int timer_ = -1;
    int publisher_ = -1;
    Phase phase_ = Phase::subscribe;
    std::mt19937_64 random_{std::random_device{}()};
    std::string answers_;    // the publisher's unparsed answers
    std::deque<Ns> sent_at_; // when each unanswered POST went out
    long untimed_answers_due_ = 0;
    long lines_ = 0; // lines read from stdin and not yet waited for
    long subscribed_ = 0;
    long ready_ = 0;
    long closed_ = 0;
    long published_ = 0;
    long answered_ = 0;
    long delivered_ = 0;
    long out_of_order_ = 0;
    std::vector<Ns> latency_;
    std::vector<Ns> publish_latency_;
};

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: pubsub_client --port P [--path /live/bench] [--subscribers N]\n"
                         "         [--kind ws|sse] [--rate R] [--seconds T] [--size B]\n"
                         "         [--batch K] [--drain S] [--timeout S] [--pause]\n");
    std::exit(2);
}

} // namespace

int main(int argc, char** argv) {
    std::signal(SIGALRM, [](int) {
        constexpr char why[] = "pubsub_client: timed out\n";
        [[maybe_unused]] auto _ = write(2, why, sizeof why - 1);
        _exit(1);
    });
    std::signal(SIGPIPE, SIG_IGN);
    Settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string_view flag = argv[i];
        if (flag == "--pause") {
            s.pause = true;
            continue;
        }
        if (i + 1 == argc) usage();
        const char* value = argv[++i];
        if (flag == "--port") {
            s.port = bench::positive(value, argv[i - 1]);
        } else if (flag == "--path") {
            s.path = value;
        } else if (flag == "--subscribers") {
            s.subscribers = bench::positive(value, argv[i - 1]);
        } else if (flag == "--kind") {
            const std::string_view kind = value;
            if (kind != "ws" && kind != "sse") usage();
            s.kind = kind == "ws" ? Kind::ws : Kind::sse;
        } else if (flag == "--rate") {
            s.rate = bench::positive(value, argv[i - 1]);
        } else if (flag == "--seconds") {
            s.seconds = bench::positive(value, argv[i - 1]);
        } else if (flag == "--size") {
            s.size = bench::positive(value, argv[i - 1]);
        } else if (flag == "--batch") {
            s.batch = bench::positive(value, argv[i - 1]);
        } else if (flag == "--drain") {
            s.drain = bench::positive(value, argv[i - 1]);
        } else if (flag == "--timeout") {
            s.timeout = bench::positive(value, argv[i - 1]);
        } else {
            usage();
        }
    }
    if (s.port == 0 || s.port > 65535 || s.rate > 1'000'000) usage();
    Bench(s).run();
}
