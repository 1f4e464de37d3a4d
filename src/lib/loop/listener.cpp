#include "loop/listener.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace weft {

namespace {

int fail(int fd, std::string& error, const std::string& what) {
    error = what + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
}

// Removes a unix socket file nobody answers on.
bool clear_stale_socket(const Address& address, std::string& error) {
    const std::string path(address.path());
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) return true; // nothing there
    if (!S_ISSOCK(st.st_mode)) {
        error = path + " exists and is not a socket";
        return false;
    }
    const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) return true;
    const bool live = ::connect(probe, address.sockaddr_ptr(), address.length()) == 0;
    ::close(probe);
    if (live) {
        error = "another server is listening on " + address.to_string();
        return false;
    }
    unlink(path.c_str());
    return true;
}

} // namespace

int open_listener(const Address& address, std::string& error, ListenOptions options) {
    const std::string where = "listen on " + address.to_string();
    if (address.kind() == Address::Kind::unix_path && !clear_stale_socket(address, error))
        return -1;
    const int fd = socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(fd, error, where);
    const int on = 1;
    if (address.kind() != Address::Kind::unix_path) {
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0 ||
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0)
            return fail(fd, error, where);
        if (options.defer_accept) {
            // Best effort: it only saves work.
            const int seconds = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds);
        }
        if (address.kind() == Address::Kind::ipv6 &&
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) != 0)
            return fail(fd, error, where);
    }
    if (bind(fd, address.sockaddr_ptr(), address.length()) != 0) return fail(fd, error, where);
    // Anyone who can reach the directory may connect, as to a TCP port (and
    // as nginx makes its unix sockets): the umask of a root start left it
    // 0755, which refuses a proxy running as another user. The directory's
    // own mode is where to restrict.
    if (address.kind() == Address::Kind::unix_path &&
        ::chmod(std::string(address.path()).c_str(), 0666) != 0)
        return fail(fd, error, where);
    if (::listen(fd, SOMAXCONN) != 0) return fail(fd, error, where);
    return fd;
}

void tune_tcp_listener(int fd, ListenOptions options) {
    const int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    if (options.defer_accept) {
        const int seconds = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds);
    }
}

} // namespace weft
