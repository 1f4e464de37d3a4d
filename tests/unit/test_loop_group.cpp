// Several loops on their threads: signals, listening, stopping, and running
// out of file descriptors.

#include "loop/io.hpp"
#include "loop/loop_group.hpp"
#include "net_helpers.hpp"
#include "signals_blocked.hpp"

#include <catch2/catch.hpp>

#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <csignal>
#include <future>
#include <set>
#include <thread>

using namespace std::chrono_literals;
using weft::Loop;
using weft::LoopGroup;
using namespace test;

namespace {

weft::Address address(const char* text) {
    std::string error;
    auto a = weft::Address::parse(text, error);
    REQUIRE(a);
    return *a;
}

std::int64_t echo(int fd) {
    char buffer[4096];
    for (;;) {
        const ssize_t n = weft::io::read(fd, buffer, sizeof buffer);
        if (n <= 0) return 0;
        if (weft::io::write(fd, buffer, static_cast<std::size_t>(n)) < 0) return 0;
    }
}

// Whether `fd` echoes a line back.
bool echoes_on(int fd) {
    if (fd < 0) return false;
    set_receive_timeout(fd, 2000);
    return send_all(fd, "ping\n") && recv_exactly(fd, 5) == "ping\n";
}

bool echoes(const weft::Address& at) {
    const int fd = connect_to(at);
    const bool ok = echoes_on(fd);
    if (fd >= 0) ::close(fd);
    return ok;
}

int open_fds() {
    int n = 0;
    DIR* dir = opendir("/proc/self/fd");
    while (readdir(dir)) ++n;
    closedir(dir);
    return n - 3; // ".", ".." and the directory's own fd
}

} // namespace

TEST_CASE("SIGTERM stops a multi-loop server, in-flight requests finished", "[loop]") {
    SignalsBlocked blocked;
    LoopGroup group({.threads = 2, .grace = 5000ms});
    std::string error;
    REQUIRE(group.open(error) == 0);
    std::atomic<int> finished{0};
    REQUIRE(group.listen(
                address("127.0.0.1:0"),
                [&](int fd) -> std::int64_t {
                    char buffer[64];
                    if (weft::io::read(fd, buffer, sizeof buffer) <= 0) return 0;
                    weft::io::sleep(300); // in flight when SIGTERM comes
                    weft::io::write(fd, "done", 4);
                    ++finished;
                    return 0;
                },
                error) == 0);
    const std::uint16_t port = group.listening_on()[0].port();

    std::string reply;
    int refused_after = 0;
    std::thread client([&] {
        const int fd = test::connect_tcp(port);
        test::send_all(fd, "request");
        std::this_thread::sleep_for(100ms);
        kill(getpid(), SIGTERM);
        reply = test::recv_to_end(fd);
        close(fd);
    });
    group.run();
    client.join();
    refused_after = test::connect_tcp(port);
    CHECK(reply == "done");
    CHECK(finished == 1);
    CHECK(refused_after == -ECONNREFUSED);
    for (std::size_t i = 0; i < group.size(); ++i) CHECK(group.loop(i).live_tasks() == 0);
}

TEST_CASE("SIGHUP and SIGUSR1 run their functions on run()'s thread, a round visits every loop",
          "[loop]") {
    SignalsBlocked blocked;
    LoopGroup group({.threads = 3});
    std::string error;
    REQUIRE(group.open(error) == 0);
    const std::thread::id main_thread = std::this_thread::get_id();
    std::atomic<int> reloads{0}, reopens{0}, visited{0}, rounds{0}, wrong_thread{0};
    group.on_reload([&] {
        wrong_thread += std::this_thread::get_id() != main_thread;
        ++reloads;
    });
    group.on_reopen_logs([&] {
        wrong_thread += std::this_thread::get_id() != main_thread;
        ++reopens;
        group.after_round(
            [&](Loop& loop) {
                wrong_thread += Loop::current() != &loop;
                ++visited;
            },
            [&] {
                wrong_thread += std::this_thread::get_id() != main_thread;
                rounds += visited == 3;
            });
    });
    std::thread sender([&] {
        std::this_thread::sleep_for(50ms);
        kill(getpid(), SIGHUP);
        for (int i = 0; i < 300 && reloads < 1; ++i) std::this_thread::sleep_for(10ms);
        kill(getpid(), SIGUSR1);
        for (int i = 0; i < 300 && rounds < 1; ++i) std::this_thread::sleep_for(10ms);
        group.stop();
    });
    group.run();
    sender.join();
    CHECK(reloads == 1);
    CHECK(reopens == 1);
    CHECK(rounds == 1);
    CHECK(wrong_thread == 0);
}

TEST_CASE("listeners open and close while the loops run", "[loop]") {
    SignalsBlocked blocked;
    LoopGroup group({.threads = 2});
    std::string error;
    REQUIRE(group.open(error) == 0);
    const std::uint16_t handler = group.add_handler(echo);
    REQUIRE(group.listen(address("127.0.0.1:0"), handler, error) == 0);
    const weft::Address first = group.listening_on().at(0);
    std::atomic<bool> second_answered{false}, first_refused{false}, first_kept{false};
    std::thread client([&] {
        std::this_thread::sleep_for(50ms);
        // A held connection of the first listener outlives its listener.
        const int held = connect_to(first);
        std::promise<weft::Address> added;
        group.run_on_main([&] {
            std::string e;
            CHECK(group.listen(address("127.0.0.1:0"), handler, e) == 0);
            added.set_value(group.listening_on().back());
        });
        const weft::Address second = added.get_future().get();
        std::this_thread::sleep_for(50ms);
        second_answered = echoes(second);
        std::promise<void> closed;
        group.run_on_main([&] {
            CHECK(group.close_listener(first));
            group.after_round({}, [&] { closed.set_value(); });
        });
        closed.get_future().get();
        first_refused = connect_to(first) < 0;
        first_kept = echoes_on(held);
        if (held >= 0) ::close(held);
        group.stop();
    });
    group.run();
    client.join();
    CHECK(second_answered);
    CHECK(first_refused);
    CHECK(first_kept);
    CHECK(group.listening_on().size() == 1);
}

TEST_CASE("port 0 is one port for every loop, and connections spread over the loops", "[loop]") {
    LoopGroup group({.threads = 2});
    std::string error;
    REQUIRE(group.open(error) == 0);
    std::mutex mutex;
    std::set<int> loops_seen;
    REQUIRE(group.listen(
                address("127.0.0.1:0"),
                [&](int fd) -> std::int64_t {
                    {
                        std::lock_guard lock(mutex);
                        loops_seen.insert(Loop::current()->index());
                    }
                    return echo(fd);
                },
                error) == 0);
    const std::uint16_t port = group.listening_on()[0].port();
    REQUIRE(port != 0);
    int wrong = 0;
    std::thread clients([&] {
        for (int i = 0; i < 64; ++i) {
            const int fd = test::connect_tcp(port);
            const std::string message = "n" + std::to_string(i);
            test::send_all(fd, message);
            wrong += test::recv_exactly(fd, message.size()) != message;
            close(fd);
        }
        group.stop();
    });
    group.run();
    clients.join();
    CHECK(wrong == 0);
    CHECK(loops_seen.size() == 2); // all 64 on one loop: odds 2^-63
}

TEST_CASE("a unix socket is shared by the loops, a stale file replaced, removed at the end",
          "[loop]") {
    const std::string path = "/tmp/weft-test-" + std::to_string(getpid()) + ".sock";
    {
        // A socket file left by a dead server.
        const int stale = socket(AF_UNIX, SOCK_STREAM, 0);
        const weft::Address at = address(("unix:" + path).c_str());
        REQUIRE(bind(stale, at.sockaddr_ptr(), at.length()) == 0);
        close(stale);
    }
    {
        LoopGroup group({.threads = 2});
        std::string error;
        REQUIRE(group.open(error) == 0);
        const weft::Address at = address(("unix:" + path).c_str());
        INFO(error);
        const mode_t umask_before = umask(022);
        REQUIRE(group.listen(at, echo, error) == 0);
        umask(umask_before);
        struct stat info {};
        REQUIRE(stat(path.c_str(), &info) == 0);
        CHECK((info.st_mode & 0777) == 0666); // any user may connect, as to a port

        // A second server on the same path is refused while this one lives.
        LoopGroup other({.threads = 1});
        REQUIRE(other.open(error) == 0);
        CHECK(other.listen(at, echo, error) != 0);
        CHECK(error == "another server is listening on unix:" + path);

        int wrong = 0;
        std::thread clients([&] {
            for (int i = 0; i < 20; ++i) {
                const int fd = test::connect_to(at);
                test::send_all(fd, "over unix");
                wrong += test::recv_exactly(fd, 9) != "over unix";
                close(fd);
            }
            group.stop();
        });
        group.run();
        clients.join();
        CHECK(wrong == 0);
    }
    CHECK(access(path.c_str(), F_OK) != 0);
}

TEST_CASE("out of file descriptors, the loop backs off instead of spinning", "[loop]") {
    LoopGroup group({.threads = 1});
    std::string error;
    REQUIRE(group.open(error) == 0);
    REQUIRE(group.listen(address("127.0.0.1:0"), echo, error) == 0);
    const std::uint16_t port = group.listening_on()[0].port();

    // The clients live in a child process, with fds of their own.
    int control[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        char command = 0;
        std::vector<int> held;
        if (read(control[1], &command, 1) != 1) _exit(1);
        for (int i = 0; i < 40; ++i) held.push_back(test::connect_tcp(port));
        write(control[1], "o", 1);
        if (read(control[1], &command, 1) != 1) _exit(1);
        for (int fd : held) close(fd);
        std::this_thread::sleep_for(300ms); // the server frees its fds, retries accept
        const int fd = test::connect_tcp(port);
        test::set_receive_timeout(fd, 5000);
        test::send_all(fd, "ping");
        const bool ok = test::recv_exactly(fd, 4) == "ping";
        write(control[1], ok ? "y" : "n", 1);
        _exit(0);
    }

    rlimit saved{};
    getrlimit(RLIMIT_NOFILE, &saved);
    rlimit low = saved;
    low.rlim_cur = static_cast<rlim_t>(open_fds() + 8); // room for a few connections
    REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);

    double cpu_seconds = -1;
    char verdict = 0;
    std::thread monitor([&] {
        auto cpu = [] {
            rusage u{};
            getrusage(RUSAGE_SELF, &u);
            return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                   double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
        };
        char reply = 0;
        write(control[0], "g", 1);
        read(control[0], &reply, 1);
        std::this_thread::sleep_for(300ms); // the table fills up
        const double before = cpu();
        std::this_thread::sleep_for(1000ms);
        cpu_seconds = cpu() - before;
        write(control[0], "c", 1);
        read(control[0], &verdict, 1);
        group.stop();
    });
    group.run();
    monitor.join();
    setrlimit(RLIMIT_NOFILE, &saved);
    int status = 0;
    waitpid(child, &status, 0);
    close(control[0]);
    close(control[1]);

    INFO("CPU used in one second with the fd table full: " << cpu_seconds << " s");
    CHECK(group.loop(0).stats().accept_pauses > 0);
    CHECK(cpu_seconds < 0.25); // a spinning loop burns the whole second
    CHECK(verdict == 'y');     // and serves again once fds are free
}
