#pragma once
// The 64-bit value a coroutine yields to its loop, and the values the loop
// resumes it with.
//
// Yielded: the low 32 bits are an Op; for the AWAIT_* ops the high 32 bits
// are the fd awaited. WANT_* wait on the coroutine's own connection fd.
//
// Resumed with, after a wait:
//   > 0   readiness: kReadable | kWritable | kPeerClosed, as far as waited for
//   0     a YIELD came round, or an explicit wake (a timer, another task)
//   < 0   -errno: kHangup (the peer hung up or the fd has an error: retry the
//         syscall to learn which), -ETIMEDOUT (the fd's timeout fired),
//         -EBUSY (another coroutine awaits that fd), -EBADF, or what
//         epoll_ctl refused with.

#include <cerrno>
#include <cstdint>

namespace weft {

enum class Op : std::uint32_t {
    yield = 0,            // run again on the next tick
    want_read = 1,        // own fd
    want_write = 2,       // own fd
    want_read_write = 3,  // own fd
    await_read = 4,       // fd in the high 32 bits
    await_write = 5,      // fd in the high 32 bits
    await_read_write = 6, // fd in the high 32 bits
    suspend = 7,          // until something wakes it
    abort = 8,            // close the connection and destroy the coroutine
    // End the task but leave the connection open, to the FdWatcher attached
    // to it (Loop::watch_fd): it closes it later with Loop::close_fd. No
    // watcher: closed as by abort.
    detach = 9,
    // As suspend, and also until the peer of its own connection ends its
    // side or the connection fails (resumed with kPeerClosed or kHangup):
    // the loop watches its entry, so a wait on events can watch a client
    // that leaves without an event of its own (event/waker.hpp).
    suspend_watching_peer = 10,
};
inline constexpr std::uint32_t kOpCount = 11;

// Interest bits: what a coroutine waits for on an fd.
inline constexpr std::uint8_t kReadable = 1;
inline constexpr std::uint8_t kWritable = 2;
// The peer's end of stream, or an error, without its bytes (EPOLLRDHUP):
// sticky once seen (fd_table.hpp).
inline constexpr std::uint8_t kPeerClosed = 4;

inline constexpr std::int64_t kHangup = -ECONNRESET;

// What each op waits for, and whether on a foreign fd: indexed by Op.
inline constexpr std::uint8_t kOpInterest[kOpCount] = {
    0, kReadable, kWritable,  kReadable | kWritable, kReadable, kWritable, kReadable | kWritable, 0,
    0, 0,         kPeerClosed};
inline constexpr bool kOpForeign[kOpCount] = {false, false, false, false, true, true,
                                              true,  false, false, false, false};

constexpr std::int64_t yield_value(Op op, int fd = 0) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(static_cast<std::uint32_t>(fd))
                                         << 32 |
                                     static_cast<std::uint32_t>(op));
}
constexpr std::uint32_t yield_op(std::int64_t value) {
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(value));
}
constexpr int yield_fd(std::int64_t value) {
    return static_cast<int>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(value) >> 32));
}

// The op that waits for `interest` on fd, foreign or own.
constexpr std::int64_t wait_value(std::uint8_t interest, bool foreign, int fd) {
    return yield_value(static_cast<Op>(interest + (foreign ? 3 : 0)), foreign ? fd : 0);
}

} // namespace weft
