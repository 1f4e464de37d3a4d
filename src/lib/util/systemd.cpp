#include "util/systemd.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace weft::systemd {

namespace {

// The unsigned number `text` is, or nullopt.
std::optional<unsigned long long> number(const char* text) {
    if (!text || !*text) return std::nullopt;
    unsigned long long value = 0;
    const char* end = text + std::strlen(text);
    const auto [ptr, ec] = std::from_chars(text, end, value);
    if (ec != std::errc{} || ptr != end) return std::nullopt;
    return value;
}

bool names_this_process(const char* pid_text) {
    const auto pid = number(pid_text);
    return pid && *pid == static_cast<unsigned long long>(::getpid());
}

} // namespace

bool same_address(const Address& a, const Address& b) {
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
    case Address::Kind::ipv4: {
        const auto& x = *reinterpret_cast<const sockaddr_in*>(a.sockaddr_ptr());
        const auto& y = *reinterpret_cast<const sockaddr_in*>(b.sockaddr_ptr());
        return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
    }
    case Address::Kind::ipv6: {
        const auto& x = *reinterpret_cast<const sockaddr_in6*>(a.sockaddr_ptr());
        const auto& y = *reinterpret_cast<const sockaddr_in6*>(b.sockaddr_ptr());
        return x.sin6_port == y.sin6_port &&
               std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0;
    }
    case Address::Kind::unix_path:
        return a.path() == b.path();
    }
    return false;
}

namespace {

// The manager's socket, connected once by connect_notify_socket() (then a
// chroot does not hide its path), or -1.
int notify_fd = -1;

// $NOTIFY_SOCKET as an address; false when unset (`error` 0) or unusable.
bool notify_address(sockaddr_un& address, socklen_t& address_length, int& error) {
    error = 0;
    const char* target = std::getenv("NOTIFY_SOCKET");
    if (!target || !*target) return false;
    const std::size_t length = std::strlen(target);
    address = {};
    address.sun_family = AF_UNIX;
    if ((target[0] != '/' && target[0] != '@') || length >= sizeof address.sun_path) {
        error = -EINVAL;
        return false;
    }
    std::memcpy(address.sun_path, target, length);
    if (target[0] == '@') address.sun_path[0] = '\0'; // abstract: no terminating NUL counts
    address_length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length +
                                            (target[0] == '@' ? 0 : 1));
    return true;
}

} // namespace

void connect_notify_socket() {
    sockaddr_un address{};
    socklen_t address_length = 0;
    int error = 0;
    if (notify_fd >= 0 || !notify_address(address, address_length, error)) return;
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), address_length) != 0) {
        ::close(fd);
        return;
    }
    notify_fd = fd;
}

int notify(std::string_view state) {
    if (notify_fd >= 0) {
        const ssize_t sent =
            ::send(notify_fd, state.data(), state.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        return sent < 0 ? -errno : 0;
    }
    sockaddr_un address{};
    socklen_t address_length = 0;
    int error = 0;
    if (!notify_address(address, address_length, error)) return error;
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    // Never waits: a receiver whose queue is full (a stuck manager, at most
    // net.unix.max_dgram_qlen datagrams) loses this one, -EAGAIN, rather than
    // stopping the thread that handles SIGTERM (it sends the heartbeat).
    const ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL | MSG_DONTWAIT,
                                  reinterpret_cast<const sockaddr*>(&address), address_length);
    const int rc = sent < 0 ? -errno : 0;
    ::close(fd);
    return rc;
}

std::string reloading_state() {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const auto usec = static_cast<unsigned long long>(now.tv_sec) * 1'000'000ULL +
                      static_cast<unsigned long long>(now.tv_nsec) / 1'000ULL;
    return "RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec);
}

std::optional<std::chrono::milliseconds> watchdog_interval() {
    const auto usec = number(std::getenv("WATCHDOG_USEC"));
    if (!usec || *usec == 0) return std::nullopt;
    const char* pid = std::getenv("WATCHDOG_PID");
    if (pid && *pid && !names_this_process(pid)) return std::nullopt;
    // At least daily: a longer interval overflows the heartbeat's clock
    // arithmetic (UINT64_MAX, systemd's infinity, sent 34,000 beats a second)
    // and poll's int timeout (past 24 days), and beating early costs nothing.
    constexpr unsigned long long kLongest = 24ULL * 3'600'000;
    return std::chrono::milliseconds(std::clamp(*usec / 2'000, 1ULL, kLongest));
}

std::vector<PassedSocket> take_passed_sockets() {
    std::vector<PassedSocket> passed;
    const auto count = number(std::getenv("LISTEN_FDS"));
    const std::string names = std::getenv("LISTEN_FDNAMES") ? std::getenv("LISTEN_FDNAMES") : "";
    if (count && names_this_process(std::getenv("LISTEN_PID"))) {
        constexpr int first = 3; // SD_LISTEN_FDS_START
        std::size_t name_at = 0;
        for (unsigned long long i = 0; i < *count; ++i) {
            PassedSocket socket;
            socket.fd = first + static_cast<int>(i);
            if (::fcntl(socket.fd, F_GETFD) < 0) {
                // Not open: LISTEN_FDS counts more than were passed (a
                // garbage count made a vector of billions: bad_alloc). One
                // entry tells match_passed_sockets to refuse it.
                socket.listening = false;
                socket.open = false;
                passed.push_back(std::move(socket));
                break;
            }
            if (name_at <= names.size() && !names.empty()) {
                const std::size_t colon = std::min(names.find(':', name_at), names.size());
                socket.name = names.substr(name_at, colon - name_at);
                name_at = colon + 1;
            }
            ::fcntl(socket.fd, F_SETFD, FD_CLOEXEC);
            const int flags = ::fcntl(socket.fd, F_GETFL);
            if (flags >= 0) ::fcntl(socket.fd, F_SETFL, flags | O_NONBLOCK);
            socket.address = Address::of_socket(socket.fd);
            int accepting = 0;
            socklen_t length = sizeof accepting;
            socket.listening =
                ::getsockopt(socket.fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) == 0 &&
                accepting != 0;
            passed.push_back(std::move(socket));
        }
    }
    ::unsetenv("LISTEN_PID");
    ::unsetenv("LISTEN_FDS");
    ::unsetenv("LISTEN_FDNAMES");
    return passed;
}

std::optional<std::vector<int>> match_passed_sockets(const std::vector<Address>& listeners,
                                                     const std::vector<PassedSocket>& passed,
                                                     std::string& error) {
    std::vector<int> served_by(listeners.size(), -1);
    for (std::size_t p = 0; p < passed.size(); ++p) {
        const std::optional<Address>& at = passed[p].address;
        const std::string which = "the socket passed by systemd as fd " +
                                  std::to_string(passed[p].fd) +
                                  (passed[p].name.empty() ? "" : " (" + passed[p].name + ")");
        if (!passed[p].open) {
            error = which + " is not open: LISTEN_FDS counts more sockets than were passed";
            return std::nullopt;
        }
        if (!passed[p].listening) {
            error = which + (at ? " on " + at->to_string() : std::string()) +
                    " is not a listening stream socket";
            return std::nullopt;
        }
        bool matched = false;
        for (std::size_t l = 0; at && l < listeners.size() && !matched; ++l) {
            if (served_by[l] < 0 && same_address(listeners[l], *at)) {
                served_by[l] = static_cast<int>(p);
                matched = true;
            }
        }
        if (!matched) {
            const std::string where =
                at ? at->to_string() : "an address weft cannot read (not a TCP or unix socket)";
            error =
                which + " listens on " + where + ", which no listener in the configuration names";
            return std::nullopt;
        }
    }
    return served_by;
}

} // namespace weft::systemd
