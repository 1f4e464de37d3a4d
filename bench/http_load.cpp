// A load generator that sends an exact number of requests and stops, which wrk
// cannot: bench/http.sh measures a server's instructions, CPU time and
// syscalls around such a fixed-count run.
//
//   http_load --port P [--path /x] [--connections K] [--requests N] [--timeout S]
//             [--warmup W] [--pause]
//       N GETs over K keep-alive connections, one in flight on each (no
//       pipelining); each response must be a 200 with a Content-Length.
//       Prints: done requests=N connections=K seconds=S rps=R reconnects=C
//       --warmup: W requests first, on the same connections, not counted.
//       --pause: prints "ready" once connected and warmed up, and waits for a
//       line on stdin before the N requests, and for another after "done"
//       before it closes: a measurement taken between the two sees requests
//       only, never a connection's accept or close.
//   http_load --port P [--path /x] --idle K [--timeout S]
//       opens K connections, one request and response on each, prints
//       "idle K" and holds them open until killed (or S seconds pass).
//   http_load --port P [--path /x] --partial K [--timeout S]
//       opens K connections and sends half of a browser-sized request head
//       on each (cut inside a field line), prints "partial K" and waits for
//       a line on stdin; then sends the rest on each, reads a 200 from each,
//       and prints "answered K".
//   http_load --free-port
//       prints a loopback port that was free a moment ago.
//
// Exits 1 (with a reason) on any error; SIGALRM ends it when S seconds
// (default 60) pass.

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.hpp"
#include "stats.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
    long port = 0;
    std::string path = "/";
    long connections = 16;
    long requests = 1000;
    long idle = 0;
    long partial = 0;
    long timeout = 60;
    long warmup = 0;
    bool pause = false;
};

[[noreturn]] void fail(const char* why) {
    std::fprintf(stderr, "http_load: %s\n", why);
    std::exit(1);
}

// One response, read from any split of the byte stream: the head up to its
// blank line, then Content-Length bytes of body.
class ResponseReader {
public:
    enum class Step { more, done };

    // Consumes up to n bytes (sets `used`); exits on a malformed response.
    Step feed(const char* p, std::size_t n, std::size_t& used) {
        used = 0;
        if (body_left_ < 0) {
            const std::size_t old = head_.size();
            head_.append(p, n);
            const auto end = head_.find("\r\n\r\n", old < 3 ? 0 : old - 3);
            if (end == std::string::npos) {
                if (head_.size() > 65536) fail("a response head over 64 KiB");
                used = n;
                return Step::more;
            }
            used = end + 4 - old;
            head_.resize(end + 4);
            parse_head();
        }
        const auto take = std::min<std::size_t>(std::size_t(body_left_), n - used);
        used += take;
        body_left_ -= long(take);
        if (body_left_ > 0) return Step::more;
        head_.clear();
        body_left_ = -1;
        return Step::done;
    }
    bool in_progress() const { return body_left_ >= 0 || !head_.empty(); }
    // Whether the last complete response said "Connection: close".
    bool closing() const { return closing_; }

private:
    void parse_head() {
        std::string_view head(head_);
        if (head.substr(0, 7) != "HTTP/1." || head.substr(8, 5) != " 200 ") {
            std::fprintf(stderr, "http_load: unexpected response: %.*s\n",
                         int(std::min<std::size_t>(head.find('\r'), 200)), head.data());
            std::exit(1);
        }
        body_left_ = -1;
        closing_ = false;
        for (auto at = head.find("\r\n"); at + 4 < head.size();) {
            const auto next = head.find("\r\n", at + 2);
            const auto line = head.substr(at + 2, next - at - 2);
            at = next;
            const auto colon = line.find(':');
            if (colon == std::string_view::npos) fail("a header line without ':'");
            auto value = line.substr(colon + 1);
            while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
            if (bench::equal_nocase(line.substr(0, colon), "content-length")) {
                body_left_ = 0;
                for (char c : value) {
                    if (c < '0' || c > '9') fail("a bad Content-Length");
                    body_left_ = body_left_ * 10 + (c - '0');
                }
            } else if (bench::equal_nocase(line.substr(0, colon), "connection")) {
                closing_ = bench::equal_nocase(value, "close");
            }
        }
        if (body_left_ < 0) fail("a response without Content-Length");
    }

    std::string head_;
    long body_left_ = -1; // -1: still reading the head
    bool closing_ = false;
};

int connect_to(long port) {
    return bench::connect_loopback(port, "http_load");
}

void send_request(int fd, const std::string& request) {
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != ssize_t(request.size()))
        fail("could not send a request");
}

// --- N requests over K connections --------------------------------------------

struct Connection {
    int fd = -1;
    ResponseReader reader;
    bool waiting = false; // a request is out and its response not yet complete
};

class Load {
public:
    Load(const Settings& s, std::string request)
        : s_(s), request_(std::move(request)), connections_(std::size_t(s.connections)) {}

    void run() {
        alarm(unsigned(s_.timeout)); // the bound on the whole run, pauses included
        for (std::size_t c = 0; c < connections_.size(); ++c) open(c);
        if (s_.warmup > 0) phase(s_.warmup);
        if (s_.pause) wait_for_go("ready");
        const double seconds = phase(s_.requests);
        std::printf("done requests=%ld connections=%ld seconds=%.3f rps=%.0f reconnects=%ld\n",
                    s_.requests, s_.connections, seconds, double(s_.requests) / seconds,
                    reconnects_);
        if (s_.pause) wait_for_go(nullptr);
    }

private:
    // `requests` requests; returns the seconds they took. Every connection is
    // idle at the end: no response is due.
    double phase(long requests) {
        sent_ = done_ = 0;
        target_ = requests;
        const auto start = Clock::now();
        for (std::size_t c = 0; c < connections_.size(); ++c) next_request(c);
        epoll_event events[64];
        static char buffer[256 * 1024];
        while (done_ < target_) {
            const int n = epoll_wait(ep_, events, 64, -1);
            for (int i = 0; i < n; ++i) on_readable(events[i].data.u64, buffer, sizeof buffer);
        }
        return std::chrono::duration<double>(Clock::now() - start).count();
    }

    static void wait_for_go(const char* say) {
        if (say) std::printf("%s\n", say);
        std::fflush(stdout);
        char line[64];
        if (!std::fgets(line, sizeof line, stdin)) fail("stdin closed during --pause");
    }

    void open(std::size_t c) {
        const int fd = connect_to(s_.port);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = c;
        epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
        connections_[c].fd = fd;
    }

    void next_request(std::size_t c) {
        if (sent_ == target_) return;
        ++sent_;
        connections_[c].waiting = true;
        send_request(connections_[c].fd, request_);
    }

    void on_readable(std::size_t c, char* buffer, std::size_t size) {
        Connection& conn = connections_[c];
        const ssize_t r = recv(conn.fd, buffer, size, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (r == 0 && !conn.waiting) return reopen(c); // closed between responses
        if (r <= 0) fail("the server closed a connection with a response due");
        std::size_t at = 0;
        while (at < std::size_t(r)) {
            if (!conn.waiting) fail("bytes after a complete response");
            std::size_t used = 0;
            const auto step = conn.reader.feed(buffer + at, std::size_t(r) - at, used);
            at += used;
            if (step == ResponseReader::Step::more) continue;
            ++done_;
            conn.waiting = false;
            if (conn.reader.closing()) {
                if (at < std::size_t(r)) fail("bytes after a closing response");
                reopen(c);
            }
            next_request(c);
        }
    }

    void reopen(std::size_t c) {
        close(connections_[c].fd);
        ++reconnects_;
        open(c);
    }

    const Settings& s_;
    const std::string request_;
    std::vector<Connection> connections_;
    int ep_ = epoll_create1(EPOLL_CLOEXEC);
    long target_ = 0;
    long sent_ = 0;
    long done_ = 0;
    long reconnects_ = 0;
};

// Reads one whole response to the one request sent on `fd`; fails with
// `closed` if the server closes first, and on any byte after the response.
void read_response(int fd, const char* closed) {
    static char buffer[256 * 1024];
    ResponseReader reader;
    for (auto step = ResponseReader::Step::more; step == ResponseReader::Step::more;) {
        const ssize_t r = recv(fd, buffer, sizeof buffer, 0);
        if (r <= 0) fail(closed);
        std::size_t used = 0;
        step = reader.feed(buffer, std::size_t(r), used);
        if (used < std::size_t(r)) fail("bytes after a complete response");
    }
}

// --- K idle connections ---------------------------------------------------------

void hold_idle(const Settings& s, const std::string& request) {
    alarm(unsigned(s.timeout)); // the bound on the whole run, holding included
    std::vector<int> fds;
    fds.reserve(std::size_t(s.idle));
    for (long i = 0; i < s.idle; ++i) {
        const int fd = connect_to(s.port);
        send_request(fd, request);
        read_response(fd, "the server closed an idle connection before its response");
        fds.push_back(fd);
    }
    std::printf("idle %ld\n", s.idle);
    std::fflush(stdout);
    for (;;) pause();
}

// --- K connections holding half a request head ------------------------------------

void hold_partial(const Settings& s) {
    alarm(unsigned(s.timeout));
    const std::string head = "GET " + s.path +
                             " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port) +
                             "\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) "
                             "Gecko/20100101 Firefox/128.0\r\nAccept: text/html,application/"
                             "xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: "
                             "en-US,en;q=0.5\r\nConnection: keep-alive\r\n\r\n";
    const std::string first = head.substr(0, head.size() / 2);
    const std::string rest = head.substr(head.size() / 2);
    std::vector<int> fds;
    fds.reserve(std::size_t(s.partial));
    for (long i = 0; i < s.partial; ++i) {
        fds.push_back(connect_to(s.port));
        send_request(fds.back(), first);
    }
    std::printf("partial %ld\n", s.partial);
    std::fflush(stdout);
    char line[64];
    if (!std::fgets(line, sizeof line, stdin)) fail("stdin closed during --partial");
    for (const int fd : fds) {
        send_request(fd, rest);
        read_response(fd, "the server closed a connection before answering its head");
        close(fd);
    }
    std::printf("answered %ld\n", s.partial);
}

void print_free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = bench::loopback(0);
    socklen_t size = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), size) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) != 0)
        fail("no free port");
    std::printf("%u\n", unsigned(ntohs(a.sin_port)));
}

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: http_load --port P [--path /x] [--connections K] "
                         "[--requests N [--warmup W] [--pause] | --idle K | --partial K]\n"
                         "       [--timeout S]\n"
                         "       http_load --free-port\n");
    std::exit(2);
}

} // namespace

int main(int argc, char** argv) {
    std::signal(SIGALRM, [](int) {
        constexpr char why[] = "http_load: timed out\n";
        [[maybe_unused]] auto _ = write(2, why, sizeof why - 1);
        _exit(1);
    });
    Settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string_view flag = argv[i];
        if (flag == "--free-port") {
            print_free_port();
            return 0;
        }
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
        } else if (flag == "--connections") {
            s.connections = bench::positive(value, argv[i - 1]);
        } else if (flag == "--requests") {
            s.requests = bench::positive(value, argv[i - 1]);
        } else if (flag == "--idle") {
            s.idle = bench::positive(value, argv[i - 1]);
        } else if (flag == "--partial") {
            s.partial = bench::positive(value, argv[i - 1]);
        } else if (flag == "--warmup") {
            s.warmup = bench::positive(value, argv[i - 1]);
        } else if (flag == "--timeout") {
            s.timeout = bench::positive(value, argv[i - 1]);
        } else {
            usage();
        }
    }
    if (s.port == 0 || s.port > 65535) usage();
    const std::string request =
        "GET " + s.path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port) + "\r\n\r\n";
    if (s.idle > 0) hold_idle(s, request);
    if (s.partial > 0) {
        hold_partial(s);
        return 0;
    }
    Load(s, request).run();
}
