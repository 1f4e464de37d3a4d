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
// Built with liburing (WEFT_HAVE_URING); without it open() always fails and
// the loop runs on epoll.

#if WEFT_HAVE_URING
#include <liburing.h>
#endif

#include <cstddef>
#include <cstdint>
#include <memory>

namespace weft {

// What a completion is for.
enum class RingOp : std::uint8_t {
    ignored = 0, // a cancel or a poll update that failed: nothing to do
    poll = 1,    // readiness of the fd
    accept = 2,  // a connection accepted on the listener fd (res: the new fd)
    update = 3,  // a poll update that failed (-EALREADY: the poll was busy; retried)
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

class Ring {
public:
    // A ring, generations for fds below `fd_limit`; nullptr with -errno in
    // `error` when the kernel refuses one. The queue sizes are for tests
    // (0: the loop's; the CQ at least as large as the SQ).
    static std::unique_ptr<Ring> open(std::size_t fd_limit, int& error, unsigned sq_entries = 0,
                                      unsigned cq_entries = 0);
    ~Ring();
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;

    std::uint32_t generation(int fd) const { return generations_[fd] & kRingGenerationMask; }
    bool current(const RingTag& tag) const {
        return static_cast<std::size_t>(tag.fd) < size_ && generation(tag.fd) == tag.generation;
    }

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
    io_uring ring_{};
    bool enabled_ = false; // set up disabled: enabled by the thread that first submits
#endif
    std::uint32_t* generations_ = nullptr; // mapped MAP_NORESERVE, zeroed
    std::size_t size_ = 0;
};

} // namespace weft
