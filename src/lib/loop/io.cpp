#include "loop/io.hpp"

#include "loop/loop.hpp"
#include "loop/ring.hpp"

#include <sys/sendfile.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace weft::io {

namespace {

// After a wait: go on with the syscall (the fd is ready, or hung up and the
// syscall will say how), or give up with the wait's own error.
bool retry_after(std::int64_t woken) {
    return woken >= 0 || woken == kHangup;
}

} // namespace

std::int64_t wait(int fd, std::uint8_t interest) {
    Task* task = Loop::current_task();
    if (!task) return -EAGAIN;
    return weft::yield(wait_value(interest, fd != task->fd, fd));
}

ssize_t read(int fd, void* buffer, std::size_t n) {
    for (;;) {
        const ssize_t got = ::read(fd, buffer, n);
        if (got >= 0) return got;
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -errno;
        const std::int64_t woken = wait(fd, kReadable);
        if (!retry_after(woken)) return woken;
    }
}

ssize_t write(int fd, const void* buffer, std::size_t n) {
    const auto* p = static_cast<const char*>(buffer);
    std::size_t left = n;
    while (left > 0) {
        const ssize_t put = ::send(fd, p, left, MSG_NOSIGNAL);
        if (put >= 0) {
            p += put;
            left -= static_cast<std::size_t>(put);
            continue;
        }
        if (errno == ENOTSOCK) {
            // Pipes and files: plain write (SIGPIPE is ignored by the server).
            const ssize_t wrote = ::write(fd, p, left);
            if (wrote >= 0) {
                p += wrote;
                left -= static_cast<std::size_t>(wrote);
                continue;
            }
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -errno;
        const std::int64_t woken = wait(fd, kWritable);
        if (!retry_after(woken)) return woken;
    }
    return static_cast<ssize_t>(n);
}

ssize_t writev(int fd, iovec* iov, int count) {
    ssize_t total = 0;
    while (count > 0) {
        const ssize_t put = ::writev(fd, iov, count);
        if (put < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) return -errno;
            const std::int64_t woken = wait(fd, kWritable);
            if (!retry_after(woken)) return woken;
            continue;
        }
        total += put;
        // Consume what went out.
        std::size_t sent = static_cast<std::size_t>(put);
        while (count > 0 && sent >= iov->iov_len) {
            sent -= iov->iov_len;
            ++iov;
            --count;
        }
        if (count > 0) {
            iov->iov_base = static_cast<char*>(iov->iov_base) + sent;
            iov->iov_len -= sent;
        }
    }
    return total;
}

ssize_t sendfile(int out_fd, int in_fd, off_t* offset, std::size_t count) {
    std::size_t left = count;
    while (left > 0) {
        const ssize_t put = ::sendfile(out_fd, in_fd, offset, left);
        if (put > 0) {
            left -= static_cast<std::size_t>(put);
            continue;
        }
        if (put == 0) break; // the file ended early
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -errno;
        const std::int64_t woken = wait(out_fd, kWritable);
        if (!retry_after(woken)) return woken;
    }
    return static_cast<ssize_t>(count - left);
}

int accept(int listen_fd, sockaddr* address, socklen_t* length) {
    for (;;) {
        const int fd = ::accept4(listen_fd, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) return fd;
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN) return -errno;
        const std::int64_t woken = wait(listen_fd, kReadable);
        if (!retry_after(woken)) return static_cast<int>(woken);
    }
}

int connect(int fd, const sockaddr* address, socklen_t length) {
    if (::connect(fd, address, length) == 0) return 0;
    if (errno != EINPROGRESS && errno != EINTR) return -errno;
    const std::int64_t woken = wait(fd, kWritable);
    if (!retry_after(woken)) return static_cast<int>(woken);
    int error = 0;
    socklen_t size = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) return -errno;
    return -error;
}

const SocketEnds* socket_ends(int fd) {
    Loop* loop = Loop::current();
    if (!loop || !loop->table().fits(fd)) return nullptr;
    SocketEnds& ends = loop->table().ends(fd);
    if (!ends.known) {
        // Zeroed first: an IPv4 address fills 16 of the 28 bytes, and the
        // FastCGI params cache compares them all.
        ends.peer = {};
        ends.local = {};
        socklen_t length = sizeof ends.peer;
        if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ends.peer), &length) != 0)
            ends.peer.sin6_family = AF_UNSPEC;
        length = sizeof ends.local;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ends.local), &length) != 0)
            ends.local.sin6_family = AF_UNSPEC;
        ends.tls = false;
        ends.proxied = false;
        ends.known = true;
    }
    return &ends;
}

void set_client(int fd, const sockaddr* client, socklen_t length, bool tls) {
    if (!socket_ends(fd)) return;
    SocketEnds& ends = Loop::current()->table().ends(fd);
    if (length > 0 && length <= sizeof ends.peer) {
        ends.peer = {};
        std::memcpy(&ends.peer, client, length);
    }
    ends.tls = tls;
    ends.proxied = true;
}

int close(int fd) {
    Loop* loop = Loop::current();
    if (loop) return loop->close_fd(fd);
    return ::close(fd) == 0 ? 0 : -errno;
}

std::int64_t sleep(std::uint32_t ms) {
    Loop* loop = Loop::current();
    Coroutine* self = Coroutine::current();
    if (!loop || !self) return -EAGAIN;
    struct Alarm : Timer {
        Coroutine* coroutine;
        ~Alarm() { cancel(); } // also when the coroutine is destroyed asleep
    } alarm;
    alarm.coroutine = self;
    alarm.fire = [](Timer& t) { Loop::current()->wake(*static_cast<Alarm&>(t).coroutine, 0); };
    loop->timers().arm(alarm, loop->now() + ms);
    return weft::yield(yield_value(Op::suspend));
}

PeerState peer_state(int fd) {
    // On a ring, a receive may have taken the peer's next bytes, or its end,
    // out of the socket already: they wait in the ring's buffer.
    if (const Loop* loop = Loop::current(); loop && loop->byte_ring()) {
        const Ring& ring = *loop->byte_ring();
        if (ring.holds_bytes(fd)) return PeerState::sent_more;
        if (ring.holds_end(fd)) return PeerState::closed;
    }
    char byte;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return PeerState::sent_more;
    return n == 0 || (errno != EAGAIN && errno != EINTR) ? PeerState::closed : PeerState::quiet;
}

} // namespace weft::io
