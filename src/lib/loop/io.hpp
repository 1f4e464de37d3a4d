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
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

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

// Whether the peer of socket `fd` has closed its side, or the socket failed
// (one recv with MSG_PEEK; never waits): a readable socket may only hold
// bytes.
bool peer_closed(int fd);

// Closes an fd this coroutine awaited (Loop::close_fd), or any other fd.
int close(int fd);

// Sleeps `ms` milliseconds on the loop's timer wheel: 0, or the negative value
// that woke it early.
std::int64_t sleep(std::uint32_t ms);

} // namespace weft::io
