// The floor: the cheapest keep-alive HTTP responder we can write over epoll,
// against which bench/http.sh holds every server's figures.
//
//   limit_responder [--port N]        (127.0.0.1; 0 or absent: any free port)
//
// One thread, level-triggered epoll, non-blocking accept4. Per readiness: one
// recv, count the blank lines that end request heads, one send of a fixed
// 13-byte-body response per head. Nothing else: no parsing, no Date, no
// timeouts, no request bodies. Prints "listening 127.0.0.1:PORT" once it
// accepts; SIGTERM ends it.

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stats.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr char response[] = "HTTP/1.1 200 OK\r\n"
                            "Server: limit\r\n"
                            "Content-Type: text/plain\r\n"
                            "Content-Length: 13\r\n"
                            "\r\n"
                            "Hello, World!";
constexpr std::size_t response_size = sizeof response - 1;
constexpr char blank_line[] = "\r\n\r\n";

// How much of "\r\n\r\n" the bytes so far end with (0..3), per fd: a head split
// across reads is still found, at no cost to the whole-head case.
std::vector<std::uint8_t> matched;

// The slow path: a byte-wise matcher for heads split across reads or pipelined.
int count_heads_slowly(std::uint8_t& state, const char* p, std::size_t n) {
    int heads = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (p[i] == blank_line[state]) {
            if (++state == 4) {
                ++heads;
                state = 0;
            }
        } else {
            // The only proper prefix of the pattern that is also a suffix is "\r".
            state = p[i] == '\r' ? 1 : 0;
        }
    }
    return heads;
}

int count_heads(std::uint8_t& state, const char* p, std::size_t n) {
    // The usual case: one whole head, ending the read.
    if (state == 0 && n >= 4 && memmem(p, n, blank_line, 4) == p + n - 4) return 1;
    return count_heads_slowly(state, p, n);
}

void close_connection(int fd) {
    matched[static_cast<std::size_t>(fd)] = 0;
    close(fd);
}

void on_readable(int fd) {
    char buffer[4096];
    const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return close_connection(fd);
    int heads = count_heads(matched[static_cast<std::size_t>(fd)], buffer, std::size_t(n));
    for (; heads > 0; --heads) {
        // No output buffering: a client that will not take ~100 bytes is dropped.
        if (send(fd, response, response_size, MSG_NOSIGNAL) != ssize_t(response_size))
            return close_connection(fd);
    }
}

void on_acceptable(int ep, int listen_fd) {
    for (;;) {
        const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        if (std::size_t(fd) >= matched.size()) {
            close(fd);
            continue;
        }
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
}

int listen_on(long port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), size) != 0 || listen(fd, 4096) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) != 0) {
        std::perror("limit_responder: listen");
        std::exit(1);
    }
    std::printf("listening 127.0.0.1:%u\n", unsigned(ntohs(a.sin_port)));
    std::fflush(stdout);
    return fd;
}

} // namespace

int main(int argc, char** argv) {
    long port = 0;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = bench::positive(argv[++i], "--port");
        } else {
            std::fprintf(stderr, "usage: limit_responder [--port N]\n");
            return 2;
        }
    }
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    matched.assign(std::min<std::size_t>(limit.rlim_cur, 1 << 20), 0);

    const int listen_fd = listen_on(port);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &ev);

    epoll_event events[256];
    for (;;) {
        const int n = epoll_wait(ep, events, 256, -1);
        for (int i = 0; i < n; ++i) {
            const int fd = events[i].data.fd;
            if (fd == listen_fd) {
                on_acceptable(ep, listen_fd);
            } else {
                on_readable(fd);
            }
        }
    }
}
