#pragma once
// The client's socket, as the response writer and the body reader use it.
//
// Sends wait when the socket is full, up to send_timeout between two writes
// (nginx's send_timeout), and are corked (MSG_MORE) while more follows at once
// or pipelined requests wait for their answers: flush() pushes out what waits
// corked, and happens before any wait to read. Reads remember whether they
// emptied the socket (a short read): then anything that comes later raises a
// fresh readiness edge, and a caller may wait without trying a read first.
//
// On a loop whose ring moves bytes (loop/ring.hpp), a parked connection's
// next bytes wait in the ring's buffer, and a send that fits a slot goes
// through the ring, one at a time: the calls here take the one and queue
// the other, and anything that writes to the socket by a syscall settles
// the send in flight first, so the bytes keep their order.
//
// Results are 0 or byte counts, or -errno: -ETIMEDOUT past a wait's timeout,
// the loop's -ECANCELED or -EBUSY, the socket's own errors.

#include "loop/io.hpp"
#include "loop/ring.hpp"

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace weft::http {

class ClientSocket {
public:
    ClientSocket(int fd, std::uint32_t send_timeout_ms);
    ClientSocket(const ClientSocket&) = delete;
    ClientSocket& operator=(const ClientSocket&) = delete;

    // For awaiting readiness or a hang-up (a PollEvent, io::wait); its
    // bytes go through the calls below.
    int fd() const { return fd_; }
    std::uint32_t send_timeout_ms() const { return send_timeout_ms_; }

    // --- sending ---
    // Every byte of the vector (consumed as it goes); 0 or -errno. Corked
    // when `more` follows at once, and while pipelined.
    int send(iovec* iov, int count, bool more = false);
    // What the socket takes of the vector now, without waiting: the bytes
    // sent (0: it is full), or -errno. Corked while pipelined.
    ssize_t send_now(const iovec* iov, int count);
    // `length` bytes of `file` from `offset`; 0 or -errno (-EIO when the
    // file ended early). Each byte that goes is counted into `sent`, so a
    // failure leaves there how far it got (the access log's byte count).
    int send_file(int file, off_t offset, std::uint64_t length, std::uint64_t& sent);
    // Pushes out what waits corked.
    void flush();
    // Waits until the ring's send in flight, if any, has ended (up to
    // send_timeout): before writing by a syscall, or handing the socket on.
    // 0, or -errno (the send's own failure).
    int settle();
    // Bytes of a next request wait behind the current one: its answer goes
    // corked, to share packets with the next.
    void set_pipelined(bool pipelined) { pipelined_ = pipelined; }

    // --- receiving ---
    // Some bytes (at most n), 0 at end of stream, or -errno (-EAGAIN: none
    // are there); never waits.
    ssize_t receive_now(void* into, std::size_t n) {
        if (ring_ && ring_->holds_input(fd_)) return ring_->take_input(fd_, into, n, drained_);
        const ssize_t got = io::recv_now(fd_, into, n);
        // A read that filled `n` may have left bytes in the socket, with no
        // edge to come for them.
        if (got >= 0) drained_ = static_cast<std::size_t>(got) < n;
        if (ring_ && got > 0) ring_->note_unordered_input();
        return got;
    }
    // As receive_now(), but waits up to `timeout_ms` when none are there.
    ssize_t receive(void* into, std::size_t n, std::uint32_t timeout_ms);
    // The last read returned less than it asked for: the socket was empty.
    bool drained() const { return drained_; }

    // Waits for `interest` (kReadable, kWritable), at most `timeout_ms`;
    // flushes first when it waits to read (the client may wait for what is
    // corked before it sends more). The readiness, or a negative value
    // (yield_protocol.hpp; kHangup: retry the syscall, it says how).
    std::int64_t wait(std::uint8_t interest, std::uint32_t timeout_ms);

private:
    const int fd_;
    const std::uint32_t send_timeout_ms_;
    Ring* const ring_;       // the loop's, when it moves bytes
    bool corked_ = false;    // a send went out with MSG_MORE
    bool pipelined_ = false; // bytes of a next request are waiting
    bool drained_ = false;
};

} // namespace weft::http
