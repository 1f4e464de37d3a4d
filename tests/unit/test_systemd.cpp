// systemd's protocol: passed sockets matched to configured listeners by the
// address they are bound to, and notifications to $NOTIFY_SOCKET.

#include "util/systemd.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

using weft::Address;
namespace systemd = weft::systemd;

namespace {

Address parse(std::string_view text) {
    std::string error;
    auto a = Address::parse(text, error);
    INFO(error);
    REQUIRE(a);
    return *a;
}

systemd::PassedSocket passed(std::string_view text, int fd = 3) {
    return {fd, "", parse(text), true};
}

} // namespace

TEST_CASE("same_address compares family, address and port, or the unix path") {
    CHECK(systemd::same_address(parse("127.0.0.1:8080"), parse("127.0.0.1:8080")));
    CHECK(systemd::same_address(parse("*:8080"), parse("0.0.0.0:8080")));
    CHECK(systemd::same_address(parse("[::1]:8080"), parse("[0:0::1]:8080")));
    CHECK(systemd::same_address(parse("unix:/run/weft.sock"), parse("unix:/run/weft.sock")));
    CHECK_FALSE(systemd::same_address(parse("127.0.0.1:8080"), parse("127.0.0.1:8081")));
    CHECK_FALSE(systemd::same_address(parse("127.0.0.1:8080"), parse("127.0.0.2:8080")));
    CHECK_FALSE(systemd::same_address(parse("*:8080"), parse("[::]:8080")));
    CHECK_FALSE(systemd::same_address(parse("unix:/run/a"), parse("unix:/run/b")));
}

TEST_CASE("each passed socket serves the listener with its address, the rest are opened") {
    const std::vector<Address> listeners = {parse("127.0.0.1:80"), parse("[::]:443"),
                                            parse("unix:/run/weft.sock"), parse("*:8080")};
    std::string error;
    const auto served_by = systemd::match_passed_sockets(
        listeners, {passed("unix:/run/weft.sock", 3), passed("127.0.0.1:80", 4)}, error);
    REQUIRE(served_by);
    CHECK(*served_by == std::vector<int>{1, -1, 0, -1});
    const auto none = systemd::match_passed_sockets(listeners, {}, error);
    REQUIRE(none);
    CHECK(*none == std::vector<int>{-1, -1, -1, -1});
}

TEST_CASE("a passed socket that no listener names is an error naming its address") {
    std::string error;
    CHECK_FALSE(systemd::match_passed_sockets(
        {parse("127.0.0.1:80")}, {passed("127.0.0.1:80", 3), passed("[::1]:81", 4)}, error));
    CHECK(error.find("fd 4") != std::string::npos);
    CHECK(error.find("[::1]:81") != std::string::npos);
    // Two sockets on one address cannot both serve its one listener.
    CHECK_FALSE(systemd::match_passed_sockets(
        {parse("127.0.0.1:80")}, {passed("127.0.0.1:80", 3), passed("127.0.0.1:80", 4)}, error));
    CHECK_FALSE(
        systemd::match_passed_sockets({parse("127.0.0.1:80")}, {{3, "web", {}, true}}, error));
    CHECK(error.find("(web)") != std::string::npos);
    systemd::PassedSocket datagram = passed("127.0.0.1:80");
    datagram.listening = false;
    CHECK_FALSE(systemd::match_passed_sockets({parse("127.0.0.1:80")}, {datagram}, error));
    CHECK(error == "the socket passed by systemd as fd 3 on 127.0.0.1:80 is not a listening "
                   "stream socket");
}

TEST_CASE("take_passed_sockets ignores another process's sockets and clears the variables") {
    ::setenv("LISTEN_FDS", "1", 1);
    ::setenv("LISTEN_PID", std::to_string(::getpid() + 1).c_str(), 1);
    ::setenv("LISTEN_FDNAMES", "web", 1);
    CHECK(systemd::take_passed_sockets().empty());
    CHECK(std::getenv("LISTEN_FDS") == nullptr);
    CHECK(std::getenv("LISTEN_PID") == nullptr);
    CHECK(std::getenv("LISTEN_FDNAMES") == nullptr);
}

TEST_CASE("watchdog_interval is half of WATCHDOG_USEC, for this process only") {
    ::unsetenv("WATCHDOG_PID");
    ::unsetenv("WATCHDOG_USEC");
    CHECK_FALSE(systemd::watchdog_interval());
    ::setenv("WATCHDOG_USEC", "400000", 1);
    CHECK(systemd::watchdog_interval() == std::chrono::milliseconds(200));
    ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
    CHECK(systemd::watchdog_interval() == std::chrono::milliseconds(200));
    ::setenv("WATCHDOG_PID", "1", 1);
    CHECK_FALSE(systemd::watchdog_interval());
    ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("WATCHDOG_USEC", "x", 1);
    CHECK_FALSE(systemd::watchdog_interval());
    ::unsetenv("WATCHDOG_PID");
    ::unsetenv("WATCHDOG_USEC");
}

TEST_CASE("notify does nothing without NOTIFY_SOCKET and sends one datagram with it") {
    ::unsetenv("NOTIFY_SOCKET");
    CHECK(systemd::notify("READY=1") == 0);

    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string name = "weft-test-notify-" + std::to_string(::getpid());
    std::copy(name.begin(), name.end(), address.sun_path + 1); // abstract
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())) == 0);
    ::setenv("NOTIFY_SOCKET", ("@" + name).c_str(), 1);
    CHECK(systemd::notify("READY=1\nSTATUS=serving") == 0);
    char buffer[64] = {};
    CHECK(::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT) == 22);
    CHECK(std::string(buffer) == "READY=1\nSTATUS=serving");
    CHECK(systemd::notify(systemd::reloading_state()) == 0);
    CHECK(::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT) > 0);
    CHECK(std::string(buffer).rfind("RELOADING=1\nMONOTONIC_USEC=", 0) == 0);
    ::unsetenv("NOTIFY_SOCKET");
    ::close(fd);
}
