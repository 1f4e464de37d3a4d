// Echo round trips per second: weft's loop with a coroutine per connection,
// against a plain epoll callback loop written here, in the same run. The
// difference is what coroutines cost.
//
//   echo [--seconds S] [--runs R] [--connections C] [--size BYTES]
//
// One server thread (CPU 0) and one client thread (CPU 1), over loopback. The
// client keeps C connections, each with one message in flight. Runs alternate
// between the two servers; each figure is a median. The last line is
// machine-readable: result coro_rps=N callback_rps=N overhead_pct=N

#include "loop/io.hpp"
#include "loop/listener.hpp"
#include "loop/loop.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "stats.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
    double seconds = 2;
    long runs = 5;
    long connections = 64;
    long size = 64;
};

void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % std::max(1u, std::thread::hardware_concurrency()), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int listening_socket(std::uint16_t& port) {
    std::string error;
    const auto address = weft::Address::parse("127.0.0.1:0", error);
    const int fd = weft::open_listener(*address, error);
    if (fd < 0) {
        std::fprintf(stderr, "echo: %s\n", error.c_str());
        std::exit(1);
    }
    port = weft::Address::of_socket(fd)->port();
    return fd;
}

// --- the client: C connections, one message each in flight ------------------

double measure(std::uint16_t port, const Settings& s) {
    pin(1);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    std::vector<int> fds;
    std::vector<long> pending(static_cast<std::size_t>(s.connections), 0);
    const std::string message(static_cast<std::size_t>(s.size), 'e');
    for (long i = 0; i < s.connections; ++i) {
        const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
            std::perror("echo: connect");
            std::exit(1);
        }
        const int on = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = static_cast<std::uint64_t>(i);
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        fds.push_back(fd);
    }
    for (int fd : fds) send(fd, message.data(), message.size(), 0);
    long trips = 0;
    const auto end = Clock::now() + std::chrono::duration<double>(s.seconds);
    const auto start = Clock::now();
    epoll_event events[256];
    char buffer[65536];
    while (Clock::now() < end) {
        const int n = epoll_wait(ep, events, 256, 100);
        for (int i = 0; i < n; ++i) {
            const auto c = static_cast<std::size_t>(events[i].data.u64);
            const ssize_t r = recv(fds[c], buffer, sizeof buffer, 0);
            if (r <= 0) {
                std::fprintf(stderr, "echo: the server closed a connection\n");
                std::exit(1);
            }
            pending[c] += r;
            if (pending[c] >= s.size) {
                pending[c] -= s.size;
                ++trips;
                send(fds[c], message.data(), message.size(), 0);
            }
        }
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    for (int fd : fds) close(fd);
    close(ep);
    return double(trips) / elapsed;
}

// --- weft: a coroutine per connection --------------------------------------

double run_coroutines(const Settings& s) {
    weft::FdTable table;
    weft::Loop loop(table);
    if (loop.open() != 0) std::exit(1);
    std::uint16_t port = 0;
    const int lfd = listening_socket(port);
    loop.add_listener(lfd, loop.add_handler([](int fd) -> std::int64_t {
        char buffer[4096];
        for (;;) {
            const ssize_t n = weft::io::read(fd, buffer, sizeof buffer);
            if (n <= 0) return 0;
            if (weft::io::write(fd, buffer, static_cast<std::size_t>(n)) < 0) return 0;
        }
    }),
                      false);
    std::thread server([&] {
        pin(0);
        loop.run();
    });
    double rps = 0;
    std::thread client([&] { rps = measure(port, s); });
    client.join();
    loop.post([&] { loop.stop(std::chrono::milliseconds(1000)); });
    server.join();
    return rps;
}

// --- the same echo as callbacks on a plain epoll loop ---------------------------

struct CallbackServer {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int listen_fd;
    // Bytes read but not yet written back, per fd (a slow reader's backlog).
    std::vector<std::string> unsent = std::vector<std::string>(65536);

    explicit CallbackServer(int lfd) : listen_fd(lfd) {
        add(listen_fd, EPOLLIN);
        add(stop_fd, EPOLLIN);
    }
    void add(int fd, std::uint32_t events) {
        epoll_event ev{};
        ev.events = events;
        ev.data.fd = fd;
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    void on_accept() {
        for (;;) {
            const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) return;
            add(fd, EPOLLIN | EPOLLRDHUP);
        }
    }
    void on_readable(int fd) {
        char buffer[4096];
        for (;;) {
            const ssize_t n = read(fd, buffer, sizeof buffer);
            if (n == 0 || (n < 0 && errno != EAGAIN)) {
                close(fd);
                unsent[static_cast<std::size_t>(fd)].clear();
                return;
            }
            if (n < 0) return;
            std::string& backlog = unsent[static_cast<std::size_t>(fd)];
            if (!backlog.empty()) {
                backlog.append(buffer, static_cast<std::size_t>(n));
                continue;
            }
            const ssize_t w = send(fd, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL);
            if (w < n) {
                backlog.assign(buffer + std::max<ssize_t>(w, 0), buffer + n);
                epoll_event ev{};
                ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
                ev.data.fd = fd;
                epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
            }
        }
    }
    void on_writable(int fd) {
        std::string& backlog = unsent[static_cast<std::size_t>(fd)];
        const ssize_t w = send(fd, backlog.data(), backlog.size(), MSG_NOSIGNAL);
        if (w > 0) backlog.erase(0, static_cast<std::size_t>(w));
        if (backlog.empty()) {
            epoll_event ev{};
            ev.events = EPOLLIN | EPOLLRDHUP;
            ev.data.fd = fd;
            epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
        }
    }
    void run() {
        epoll_event events[256];
        for (;;) {
            const int n = epoll_wait(ep, events, 256, -1);
            for (int i = 0; i < n; ++i) {
                const int fd = events[i].data.fd;
                if (fd == stop_fd) return;
                if (fd == listen_fd) {
                    on_accept();
                    continue;
                }
                if (events[i].events & EPOLLOUT) on_writable(fd);
                if (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                    on_readable(fd);
            }
        }
    }
    ~CallbackServer() {
        close(ep);
        close(stop_fd);
        close(listen_fd);
    }
};

double run_callbacks(const Settings& s) {
    std::uint16_t port = 0;
    CallbackServer server(listening_socket(port));
    std::thread thread([&] {
        pin(0);
        server.run();
    });
    double rps = 0;
    std::thread client([&] { rps = measure(port, s); });
    client.join();
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(server.stop_fd, &one, sizeof one);
    thread.join();
    return rps;
}

bool parse(const char* text, double& out) {
    char* end = nullptr;
    out = std::strtod(text, &end);
    return end != text && *end == '\0' && out > 0;
}

} // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);
    Settings s;
    // Every option takes a value: they come in pairs.
    for (int i = 1; i < argc; i += 2) {
        double value = 0;
        if (i + 1 >= argc || !parse(argv[i + 1], value)) {
            std::fprintf(stderr,
                         "usage: echo [--seconds S] [--runs R] [--connections C] [--size BYTES]\n");
            return 2;
        }
        if (std::strcmp(argv[i], "--seconds") == 0) {
            s.seconds = value;
        } else if (std::strcmp(argv[i], "--runs") == 0) {
            s.runs = static_cast<long>(value);
        } else if (std::strcmp(argv[i], "--connections") == 0) {
            s.connections = static_cast<long>(value);
        } else if (std::strcmp(argv[i], "--size") == 0) {
            s.size = static_cast<long>(value);
        } else {
            std::fprintf(stderr, "echo: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    std::vector<double> coro, callback;
    for (long r = 0; r < s.runs; ++r) {
        coro.push_back(run_coroutines(s));
        callback.push_back(run_callbacks(s));
        std::printf("run %ld: coroutines %.0f rps, callbacks %.0f rps\n", r + 1, coro.back(),
                    callback.back());
        std::fflush(stdout);
    }
    const double c = bench::median(coro), b = bench::median(callback);
    std::printf("%ld connections, %ld-byte messages, %.1f s a run, median of %ld runs\n",
                s.connections, s.size, s.seconds, s.runs);
    std::printf("result coro_rps=%.0f callback_rps=%.0f overhead_pct=%.1f\n", c, b,
                (b - c) / b * 100);
    return 0;
}
