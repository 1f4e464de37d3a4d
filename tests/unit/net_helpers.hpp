#pragma once
// Blocking loopback clients for the loop tests.

#include "util/address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace test {

// A blocking TCP connection to 127.0.0.1:port, or -errno.
inline int connect_tcp(std::uint16_t port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        const int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

inline int connect_to(const weft::Address& address) {
    const int fd = socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, address.sockaddr_ptr(), address.length()) != 0) {
        const int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

inline bool send_all(int fd, const std::string& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) return false;
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

// Reads exactly n bytes (fewer if the peer closes first).
inline std::string recv_exactly(int fd, std::size_t n) {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = recv(fd, out.data() + got, n - got, 0);
        if (r <= 0) break;
        got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    return out;
}

// Reads until the peer closes; stops early on an error.
inline std::string recv_to_end(int fd) {
    std::string out;
    char buffer[4096];
    for (;;) {
        const ssize_t r = recv(fd, buffer, sizeof buffer, 0);
        if (r <= 0) break;
        out.append(buffer, static_cast<std::size_t>(r));
    }
    return out;
}

inline void set_receive_timeout(int fd, int ms) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

} // namespace test
