#pragma once
// I/O for coroutine code that reads as if it blocked: each call tries the
// syscall first and yields to the loop only on EAGAIN, waiting on the
// coroutine's own connection (WANT_*) or on another fd (AWAIT_*).
//
// Results are byte counts, or -errno. A wait that ends without the fd being
// ready ends the call with the wait's error: -ETIMEDOUT (the connection's
// timeout, Loop::set_timeout), -EBUSY, -EBADF. Outside a loop's coroutine the
// calls fail with -EAGAIN instead of waiting.

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace weft {
struct SocketEnds;
}

namespace weft::io {

// Waits until `fd` is ready for `interest` (kReadable, kWritable); returns the
// readiness, or a negative value (see yield_protocol.hpp).
std::int64_t wait(int fd, std::uint8_t interest);

// Some bytes (at most n), 0 at end of stream, or -errno.
ssize_t read(int fd, void* buffer, std::size_t n);
// All n bytes, or -errno.
ssize_t write(int fd, const void* buffer, std::size_t n);
// Every byte of the vector (iov is consumed as it goes), or -errno.
ssize_t writev(int fd, iovec* iov, int count);
// `count` bytes of in_fd from *offset (advanced), fewer only at the file's
// end, or -errno.
ssize_t sendfile(int out_fd, int in_fd, off_t* offset, std::size_t count);
// A connected socket (non-blocking, close-on-exec), or -errno.
int accept(int listen_fd, sockaddr* address = nullptr, socklen_t* length = nullptr);
// Connects a non-blocking socket: 0 or -errno.
int connect(int fd, const sockaddr* address, socklen_t length);

// Whether the peer of socket `fd` has closed its side, or the socket failed,
// or sent more (one recv with MSG_PEEK; never waits): a readable socket may
// only hold bytes, or none any more. On a loop whose ring moves bytes, what
// a receive took out of the socket first (ring.hpp) counts, without a peek.
enum class PeerState : std::uint8_t {
    closed,    // its side is shut, or the socket failed
    sent_more, // bytes wait to be read
    quiet,     // neither: a readiness seen for it was for bytes taken since
};
PeerState peer_state(int fd);
inline bool peer_closed(int fd) {
    return peer_state(fd) == PeerState::closed;
}

// --- one syscall, never waiting ---
// recv and send straight through syscall(): libc's wrappers are cancellation
// points, and switching asynchronous cancellation on and off around each call
// cost 60 instructions a request. weft never cancels threads. Each gives the
// bytes moved (0 from recv_now: end of stream), or -errno (-EAGAIN: not now);
// EINTR is retried. send_now never raises SIGPIPE.

inline ssize_t recv_now(int fd, void* into, std::size_t n) {
    for (;;) {
        const ssize_t got = ::syscall(SYS_recvfrom, fd, into, n, 0, nullptr, nullptr);
        if (got >= 0) return got;
        if (errno != EINTR) return -errno;
    }
}

inline ssize_t send_now(int fd, const void* bytes, std::size_t n) {
    for (;;) {
        const ssize_t put = ::syscall(SYS_sendto, fd, bytes, n, MSG_NOSIGNAL, nullptr, 0);
        if (put >= 0) return put;
        if (errno != EINTR) return -errno;
    }
}

// `flags` as sendmsg's: the caller's MSG_NOSIGNAL (and MSG_MORE).
inline ssize_t sendmsg_now(int fd, const msghdr* message, int flags) {
    for (;;) {
        const ssize_t put = ::syscall(SYS_sendmsg, fd, message, flags);
        if (put >= 0) return put;
        if (errno != EINTR) return -errno;
    }
}

// The two ends of connection `fd` as the loop noted them at accept
// (fd_table.hpp), asked of the socket once for one it did not accept (an
// address it could not learn has family AF_UNSPEC); nullptr outside a loop
// or for an fd beyond its table.
const SocketEnds* socket_ends(int fd);
// What a PROXY protocol header said of connection `fd`: the client (`length`
// 0: the peer stays) and whether it spoke TLS to the proxy. socket_ends()
// gives them from now on.
void set_client(int fd, const sockaddr* client, socklen_t length, bool tls);

// Closes an fd this coroutine awaited (Loop::close_fd), or any other fd.
int close(int fd);

// Sleeps `ms` milliseconds on the loop's timer wheel: 0, or the negative value
// that woke it early.
std::int64_t sleep(std::uint32_t ms);

} // namespace weft::io
