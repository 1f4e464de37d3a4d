#pragma once
// Ring: one loop's io_uring, stage 1 of the uring backend (docs/architecture.md,
// "I/O backends"). The loop keeps the epoll model above it: readiness comes
// from a multishot POLL_ADD per watched fd (edge-like: a completion per
// wake-up, as EPOLLET gives an event), listeners accept through a multishot
// ACCEPT, and each tick is one io_uring_enter that submits what the tick
// queued and waits.
//
// Each request carries kind | generation | fd in its user_data. The ring
// keeps a generation per fd, bumped whenever the loop forgets the fd (closes
// it, or stops watching it): a completion whose generation is not the fd's
// current one belongs to an fd since closed, maybe reused, and is ignored.
// An armed poll holds a reference to its file (a socket closed under it
// sends no FIN), so forgetting an fd also cancels its poll.
//
// Stage 2 moves a keep-alive connection's bytes through the ring too:
// - Receiving: a connection that parks idle arms one RECV that picks a buffer
//   from the loop's provided-buffer ring when bytes come. The completion
//   starts its coroutine, whose first read takes them from that buffer: no
//   recv syscall. One receive per parked connection, so a connection never
//   holds more than one buffer, and an idle one holds none. (A multishot
//   receive would fill buffer after buffer for a client that sends faster
//   than it is served: it cannot be capped per connection.)
// - Sending: a response that fits a send slot is copied there and goes out
//   in the tick's enter: no send syscall. The slot is the loop's memory, so
//   nothing the kernel reads can be freed or reused under it, however the
//   coroutine ends. One send in flight per connection; anything else that
//   writes to it (a larger send, a file, a shutdown, a detached session)
//   waits for it first (ClientSocket::settle). A connection closed while its
//   send is in flight is closed when the send ends (an orphan: the slot owns
//   the fd, as the kernel owns a closed socket's unsent bytes), or when it
//   has not ended within kOrphanMs.
//
// Built with liburing (WEFT_HAVE_URING); without it open() always fails and
// the loop runs on epoll.

#if WEFT_HAVE_URING
#include <liburing.h>
#endif

#include "loop/timer_wheel.hpp"

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace weft {

// What a completion is for.
enum class RingOp : std::uint8_t {
    ignored = 0, // a cancel or a poll update that failed: nothing to do
    poll = 1,    // readiness of the fd
    accept = 2,  // a connection accepted on the listener fd (res: the new fd)
    update = 3,  // a poll update that failed (-EALREADY: the poll was busy; retried)
    receive = 4, // bytes received into a provided buffer (res: how many; 0: end of stream)
    send = 5,    // a send slot's bytes sent (the tag's generation is the slot)
};

struct RingTag {
    RingOp op;
    std::uint32_t generation; // 24 bits
    int fd;
};

inline constexpr std::uint32_t kRingGenerationMask = 0xffffff;

constexpr std::uint64_t ring_tag(RingOp op, std::uint32_t generation, int fd) {
    return static_cast<std::uint64_t>(op) << 56 |
           static_cast<std::uint64_t>(generation & kRingGenerationMask) << 32 |
           static_cast<std::uint32_t>(fd);
}

constexpr RingTag ring_untag(std::uint64_t user_data) {
    return {static_cast<RingOp>(user_data >> 56),
            static_cast<std::uint32_t>(user_data >> 32) & kRingGenerationMask,
            static_cast<int>(static_cast<std::uint32_t>(user_data))};
}

// One completion, copied out of the CQ (which is advanced before any is
// handled: handling one may queue requests, and a full SQ submits).
struct RingCompletion {
    std::uint64_t user_data;
    std::int32_t res;
    std::uint32_t flags;
    // IORING_CQE_F_MORE (1 << 1): the multishot request goes on.
    bool more() const { return flags & 2u; }
};

// What the ring keeps per fd, beside the loop's FdEntry (which is full).
struct RingFd {
    std::uint32_t generation; // 24 bits used
    std::uint16_t held;       // the buffer holding received bytes not yet taken, + 1; 0: none
    std::uint16_t sending;    // the send slot in flight, + 1; 0: none
    std::uint16_t held_at;    // where the untaken bytes start in the held buffer
    std::uint16_t held_end;   // and end
    std::int16_t ended;      // the receive saw the end of stream (1) or failed (-errno); 0: neither
    std::int16_t send_error; // a send in the ring that failed (-errno), for the next send
    bool receiving;          // a receive is armed
    bool held_all;           // the receive filled its buffer: more may wait in the socket
    bool parked;             // a receive was armed: the connection has parked before
};

// One send in flight: the bytes, copied, and whose they are.
struct SendSlot {
    int fd = -1;
    std::uint32_t generation = 0; // the fd's when it was queued
    std::uint32_t length = 0;
    std::uint32_t done = 0;
    bool orphan = false;   // its connection closed: the slot closes the fd when it ends
    Timer deadline;        // an orphan's: cancelled past it
    char* bytes = nullptr; // kSendSlotSize of the slots' mapping
    std::uint16_t next_free = 0;
};

class Ring {
public:
    // Receive buffers (a provided-buffer ring per loop) and send slots.
    static constexpr unsigned kReceiveBuffers = 128;
    static constexpr std::uint32_t kReceiveBufferSize = 4096;
    static constexpr unsigned kSendSlots = 64;
    static constexpr std::uint32_t kSendSlotSize = 16 * 1024;
    // How long an orphan's send may take before it is cancelled (nginx's
    // send_timeout default).
    static constexpr std::uint32_t kOrphanMs = 60'000;

    // A ring, generations for fds below `fd_limit`; nullptr with -errno in
    // `error` when the kernel refuses one. The queue sizes are for tests
    // (0: the loop's; the CQ at least as large as the SQ).
    static std::unique_ptr<Ring> open(std::size_t fd_limit, int& error, unsigned sq_entries = 0,
                                      unsigned cq_entries = 0);
    ~Ring();
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;

    std::uint32_t generation(int fd) const { return fds_[fd].generation & kRingGenerationMask; }
    bool current(const RingTag& tag) const {
        return static_cast<std::size_t>(tag.fd) < size_ && generation(tag.fd) == tag.generation;
    }
    // Whether connections' bytes go through the ring (stage 2): the kernel
    // took the buffer ring. Without, the ring only polls and accepts.
    bool moves_bytes() const { return buffers_ != nullptr; }

    // Queues a multishot poll of `fd` for `events` (POLL* bits, the same as
    // EPOLL*): a completion per wake-up, res the ready mask.
    bool poll(int fd, std::uint32_t events);
    // Changes the events of fd's armed poll (its completions go on). A
    // completion only if it fails: -EALREADY when the poll was completing
    // at that moment (ready when armed in the same submit, say): the caller
    // updates again.
    bool update_poll(int fd, std::uint32_t events);
    // Queues a multishot accept on listener `fd` (non-blocking, close-on-exec
    // connections, no address).
    bool accept(int fd);
    // The loop forgets `fd`: the armed request of kind `op` (if `armed`) is
    // cancelled and the generation bumped, so nothing it completes with
    // counts any more.
    void forget(int fd, RingOp op, bool armed);

    // --- receiving (moves_bytes()) ---
    // Arms one receive on connection `fd` into a provided buffer.
    bool receive(int fd);
    bool receiving(int fd) const { return fds_[fd].receiving; }
    // Whether connection `fd` parked with a receive before (it may then
    // have no poll registered: http::Connection asks).
    bool parked_before(int fd) const { return fds_[fd].parked; }
    // Takes a receive's completion: what it holds is kept for take_input().
    // false when it is stale (its buffer went back).
    bool on_receive(const RingTag& tag, const RingCompletion& completion);
    // Whether take_input() has something for fd (bytes, the end, an error).
    bool holds_input(int fd) const {
        const RingFd& f = fds_[fd];
        return f.held | f.ended;
    }
    // Whether a receive brought bytes not taken yet; whether it saw the end
    // of stream or failed (io::peer_state asks: the socket shows neither).
    bool holds_bytes(int fd) const { return fds_[fd].held != 0; }
    bool holds_end(int fd) const { return fds_[fd].ended != 0; }
    // Up to n of the held bytes into `into` (0: the end of stream; -errno:
    // the receive failed). `drained`: they were all, and the receive left
    // the socket empty. The buffer goes back once emptied.
    ssize_t take_input(int fd, void* into, std::size_t n, bool& drained);

    // --- sending (moves_bytes()) ---
    bool sending(int fd) const { return fds_[fd].sending != 0; }
    // Copies the vector into a free slot and queues its send: the bytes
    // queued (all of them), or 0 when it cannot (no slot free, larger than a
    // slot, a send in flight): the caller sends them itself.
    std::size_t send(int fd, const iovec* iov, int count);
    // The error a send in the ring ended with, since the last call: 0 or -errno.
    int take_send_error(int fd) {
        return static_cast<int>(std::exchange(fds_[fd].send_error, std::int16_t{0}));
    }
    SendSlot& slot(std::uint32_t index) { return slots_[index]; }
    // A send's completion. A short send queues the rest. Else the slot is
    // free again: an orphan's fd is closed, a live connection's error kept
    // for take_send_error().
    // Returns the fd whose writer may go on (its send ended), or -1.
    int on_send(const RingTag& tag, const RingCompletion& completion);
    // Connection `fd` closes while its send is in flight: the slot closes it
    // when the send ends. Returns the slot (its deadline for the caller to
    // arm), or nullptr when no send is in flight.
    SendSlot* orphan(int fd);
    // Cancels an orphan's send; its completion then closes the fd.
    void cancel_send(const SendSlot& slot);

    // For FsWatch::drain() (fs_watch.cpp): whether every request's bytes
    // since the inotify queue was last read came with a receive's
    // completion, in order behind the inotify poll's. http::ClientSocket
    // notes a read by a syscall, and the loop a poll it armed again (its
    // completion may then come after a receive's); a loop whose requests
    // are read otherwise never took ring input, and reads.
    void note_unordered_input() { unordered_ = true; }
    bool only_ring_input() const { return ring_input_ && !unordered_; }
    void note_events_read() { unordered_ = ring_input_ = false; }

    // Orphans whose sends have not ended: a stopping loop waits for them
    // (up to its grace), as the kernel would send a closed socket's bytes.
    unsigned orphans() const { return orphans_; }

    // Submits what is queued and waits up to timeout_ms (-1: until a
    // completion; 0: does not wait) in one io_uring_enter; the completions
    // are then ready for take().
    void submit_and_wait(int timeout_ms);
    // Up to `n` completions, copied into `out`, and consumed.
    unsigned take(RingCompletion* out, unsigned n);

private:
    Ring() = default;
#if WEFT_HAVE_URING
    io_uring_sqe* sqe();
    void open_bytes();
    void give_back(std::uint16_t buffer);
    bool queue_send(std::uint32_t index);
    io_uring ring_{};
    bool enabled_ = false; // set up disabled: enabled by the thread that first submits
    io_uring_buf_ring* buffers_ = nullptr;
#else
    void* buffers_ = nullptr;
#endif
    RingFd* fds_ = nullptr; // mapped MAP_NORESERVE, zeroed
    std::size_t size_ = 0;
    char* receive_memory_ = nullptr; // kReceiveBuffers of kReceiveBufferSize
    char* send_memory_ = nullptr;    // kSendSlots of kSendSlotSize
    SendSlot slots_[kSendSlots];
    std::uint16_t free_slot_ = 0; // + 1, through SendSlot::next_free; 0: none
    bool unordered_ = true;
    unsigned orphans_ = 0;
    bool ring_input_ = false; // take_input() handed out bytes
};

} // namespace weft
