#include "http/client_socket.hpp"

#include "loop/io.hpp"
#include "loop/loop.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/sendfile.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace weft::http {

ClientSocket::ClientSocket(int fd, std::uint32_t send_timeout_ms)
    : fd_(fd), send_timeout_ms_(send_timeout_ms),
      ring_(Loop::current() ? Loop::current()->byte_ring() : nullptr) {}

int ClientSocket::settle() {
    if (!ring_) return 0;
    while (ring_->sending(fd_)) {
        // The send's end wakes a writer (Loop::on_send).
        const std::int64_t woke = wait(kWritable, send_timeout_ms_);
        if (woke == kHangup) return -EPIPE; // it ends failing; the loop closes after it
        if (woke < 0) return static_cast<int>(woke);
    }
    return ring_->take_send_error(fd_);
}

std::int64_t ClientSocket::wait(std::uint8_t interest, std::uint32_t timeout_ms) {
    Loop& loop = *Loop::current();
    if (interest & kReadable) flush();
    loop.set_timeout(fd_, timeout_ms);
    const std::int64_t result = io::wait(fd_, interest);
    loop.clear_timeout(fd_);
    return result;
}

void ClientSocket::flush() {
    if (!corked_) return;
    corked_ = false;
    // Setting TCP_NODELAY pushes out what MSG_MORE held back.
    const int on = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

int ClientSocket::send(iovec* iov, int count, bool more) {
    more = more || pipelined_;
    if (ring_) {
        if (const int error = settle()) return error;
        // Not corked (a send with MSG_MORE waits for more): through the ring.
        if (!more && ring_->send(fd_, iov, count)) {
            corked_ = false;
            return 0;
        }
    }
    const int flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0);
    // What is left to send: mostly, one sendmsg takes it all, and walking
    // the vector after it cost more than summing it first.
    std::size_t left = 0;
    for (int i = 0; i < count; ++i) left += iov[i].iov_len;
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<std::size_t>(count);
    for (;;) {
        const ssize_t n = io::sendmsg_now(fd_, &message, flags);
        if (n < 0) {
            if (n != -EAGAIN) return static_cast<int>(n);
            const std::int64_t woke = wait(kWritable, send_timeout_ms_);
            if (woke < 0 && woke != kHangup) return static_cast<int>(woke);
            continue;
        }
        std::size_t sent = static_cast<std::size_t>(n);
        left -= sent;
        if (left == 0) break;
        while (message.msg_iovlen && sent >= message.msg_iov->iov_len) {
            sent -= message.msg_iov->iov_len;
            ++message.msg_iov;
            --message.msg_iovlen;
        }
        if (message.msg_iovlen == 0) break;
        message.msg_iov->iov_base = static_cast<char*>(message.msg_iov->iov_base) + sent;
        message.msg_iov->iov_len -= sent;
    }
    corked_ = more;
    return 0;
}

ssize_t ClientSocket::send_now(const iovec* iov, int count) {
    if (ring_) {
        if (ring_->sending(fd_)) {
            // Full, for now: its end wakes a writer. Unless the socket hung
            // up: every wait on it ends at once (the hang-up stays), and a
            // writer that waits and tries again would spin, never letting
            // the loop take the send's end (a client's RST mid-answer).
            if (Loop::current()->table()[fd_].ready & kHungUp) return -EPIPE;
            return 0;
        }
        if (const int error = ring_->take_send_error(fd_)) return error;
        if (!pipelined_) {
            if (const std::size_t queued = ring_->send(fd_, iov, count)) {
                corked_ = false;
                return static_cast<ssize_t>(queued);
            }
        }
    }
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(iov);
    message.msg_iovlen = static_cast<std::size_t>(count);
    const ssize_t n = io::sendmsg_now(fd_, &message, MSG_NOSIGNAL | (pipelined_ ? MSG_MORE : 0));
    if (n >= 0) {
        corked_ = pipelined_;
        return n;
    }
    return n == -EAGAIN ? 0 : n;
}

int ClientSocket::send_file(int file, off_t offset, std::uint64_t length, std::uint64_t& sent) {
    if (const int error = settle()) return error;
    while (length) {
        const std::size_t chunk = std::min<std::uint64_t>(length, 1u << 30);
        const ssize_t n = ::sendfile(fd_, file, &offset, chunk);
        if (n > 0) {
            length -= static_cast<std::uint64_t>(n);
            sent += static_cast<std::uint64_t>(n);
            continue;
        }
        if (n == 0) return -EIO; // the file shrank under us
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -errno;
        const std::int64_t woke = wait(kWritable, send_timeout_ms_);
        if (woke < 0 && woke != kHangup) return static_cast<int>(woke);
    }
    corked_ = false;
    return 0;
}

ssize_t ClientSocket::receive(void* into, std::size_t n, std::uint32_t timeout_ms) {
    for (;;) {
        const ssize_t got = receive_now(into, n);
        if (got != -EAGAIN) return got;
        const std::int64_t woke = wait(kReadable, timeout_ms);
        if (woke < 0 && woke != kHangup) return woke;
    }
}

} // namespace weft::http
