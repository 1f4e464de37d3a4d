// systemd's protocol at its limits: a manager that does not read, a watchdog
// of systemd's "infinity", and a LISTEN_FDS larger than what was passed.

#include "util/systemd.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

namespace systemd = weft::systemd;

TEST_CASE("notify never waits for a manager whose queue is full") {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string name = "weft-test-full-" + std::to_string(::getpid());
    std::copy(name.begin(), name.end(), address.sun_path + 1); // abstract
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())) == 0);
    ::setenv("NOTIFY_SOCKET", ("@" + name).c_str(), 1);
    // Nobody reads: past net.unix.max_dgram_qlen (10 here, 512 under
    // systemd) a blocking send would wait forever. On a thread of its own,
    // left behind if it does.
    auto result = std::make_shared<std::atomic<int>>(1);
    std::thread([result] {
        int rc = 0;
        for (int i = 0; i < 2000 && rc == 0; ++i) rc = systemd::notify("WATCHDOG=1");
        *result = rc;
    }).detach();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (*result == 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(*result == -EAGAIN);
    ::unsetenv("NOTIFY_SOCKET");
    ::close(fd);
}

TEST_CASE("watchdog_interval beats at least daily, whatever WATCHDOG_USEC says") {
    ::unsetenv("WATCHDOG_PID");
    constexpr std::chrono::milliseconds day = std::chrono::hours(24);
    ::setenv("WATCHDOG_USEC", "18446744073709551615", 1); // systemd's infinity
    CHECK(systemd::watchdog_interval() == day);
    ::setenv("WATCHDOG_USEC", "8589934594000", 1); // poll's int would wrap to 1 ms
    CHECK(systemd::watchdog_interval() == day);
    ::setenv("WATCHDOG_USEC", "172800000000", 1); // two days: one
    CHECK(systemd::watchdog_interval() == day);
    ::setenv("WATCHDOG_USEC", "1", 1);
    CHECK(systemd::watchdog_interval() == std::chrono::milliseconds(1));
    ::unsetenv("WATCHDOG_USEC");
}

TEST_CASE("take_passed_sockets ends at the first fd LISTEN_FDS names that is not open") {
    // In a child: fds 3.. are then only the one socket passed.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in any{};
        any.sin_family = AF_INET;
        any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 ||
            ::listen(listener, 1) != 0 || ::dup2(listener, 3) != 3)
            ::_exit(10);
        ::close_range(4, ~0U, 0);
        ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
        ::setenv("LISTEN_FDS", "1000", 1); // a garbage count (billions: bad_alloc)
        const auto passed = systemd::take_passed_sockets();
        if (passed.size() != 2) ::_exit(11);
        if (passed[0].fd != 3 || !passed[0].listening || passed[1].fd != 4) ::_exit(12);
        std::string error;
        const auto address = weft::Address::of_socket(3);
        if (!address || systemd::match_passed_sockets({*address}, passed, error)) ::_exit(13);
        if (error != "the socket passed by systemd as fd 4 is not open: LISTEN_FDS counts more "
                     "sockets than were passed")
            ::_exit(14);
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}
