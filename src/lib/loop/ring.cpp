#include "loop/ring.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <thread>

namespace weft {

#if WEFT_HAVE_URING

static_assert(IORING_CQE_F_MORE == 2u, "RingCompletion::more");

namespace {

// A tick queues at most a few requests per fd it touched; a full SQ is
// submitted early (one more io_uring_enter), never lost.
constexpr unsigned kSqEntries = 1024;
// Completions wait here between ticks (a tick takes 256): room for bursts.
// Past it the kernel keeps them (IORING_FEAT_NODROP) and ends the multishot
// requests that overflowed, which the loop re-arms.
constexpr unsigned kCqEntries = 16384;

// Tried in order: the kernel refuses (EINVAL) flags it does not know.
constexpr unsigned kSetups[] = {
    // Completions are handled only when the loop enters the ring, by its own
    // thread (which enables the ring: set up on another thread, by open()).
    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED |
        IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL,
    IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL,
    0,
};

// liburing 2.3 declares io_uring_enable_rings but does not export it.
void enable(io_uring& ring) {
    io_uring_register(static_cast<unsigned>(ring.ring_fd), IORING_REGISTER_ENABLE_RINGS, nullptr,
                      0);
}

} // namespace

std::unique_ptr<Ring> Ring::open(std::size_t fd_limit, int& error, unsigned sq_entries,
                                 unsigned cq_entries) {
    std::unique_ptr<Ring> ring(new Ring);
    ring->ring_.ring_fd = -1; // none yet
    void* memory = mmap(nullptr, fd_limit * sizeof(std::uint32_t), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
        error = -errno;
        return nullptr;
    }
    ring->generations_ = static_cast<std::uint32_t*>(memory);
    ring->size_ = fd_limit;
    // Set up by a thread of its own, ended at once: the kernel signals
    // (TWA_SIGNAL) every task that set up or used a ring when the ring is
    // torn down, and a blocking call with a timeout (recv under SO_RCVTIMEO)
    // in the thread that opened the loop would fail with EINTR then.
    int rc = -EINVAL;
    std::thread([&] {
        for (const unsigned flags : kSetups) {
            io_uring_params params{};
            params.flags = flags | IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
            params.cq_entries = cq_entries ? cq_entries : kCqEntries;
            rc = io_uring_queue_init_params(sq_entries ? sq_entries : kSqEntries, &ring->ring_,
                                            &params);
            if (rc != -EINVAL) break;
        }
    }).join();
    if (rc < 0) {
        ring->ring_.ring_fd = -1;
        error = rc;
        return nullptr;
    }
    ring->enabled_ = !(ring->ring_.flags & IORING_SETUP_R_DISABLED);
    return ring;
}

Ring::~Ring() {
    if (ring_.ring_fd >= 0) io_uring_queue_exit(&ring_);
    if (generations_) munmap(generations_, size_ * sizeof(std::uint32_t));
}

io_uring_sqe* Ring::sqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe) return sqe;
    // Full: submit early (rare; one more enter).
    if (!enabled_) {
        enable(ring_);
        enabled_ = true;
    }
    io_uring_submit(&ring_);
    return io_uring_get_sqe(&ring_);
}

bool Ring::poll(int fd, std::uint32_t events) {
    io_uring_sqe* s = sqe();
    if (!s) return false;
    io_uring_prep_poll_multishot(s, fd, events);
    io_uring_sqe_set_data64(s, ring_tag(RingOp::poll, generation(fd), fd));
    return true;
}

bool Ring::update_poll(int fd, std::uint32_t events) {
    io_uring_sqe* s = sqe();
    if (!s) return false;
    const std::uint64_t armed = ring_tag(RingOp::poll, generation(fd), fd);
    // IORING_POLL_ADD_MULTI again: an update without it makes the poll
    // one-shot; the user_data "updated" to itself (the kernel refuses a new
    // one without the flag, EINVAL). Its own completion only if it fails
    // (the poll ended: its last completion, on its way, re-arms it with the
    // grown mask).
    io_uring_prep_poll_update(s, armed, armed, events,
                              IORING_POLL_UPDATE_EVENTS | IORING_POLL_UPDATE_USER_DATA |
                                  IORING_POLL_ADD_MULTI);
    io_uring_sqe_set_data64(s, ring_tag(RingOp::update, generation(fd), fd));
    s->flags |= IOSQE_CQE_SKIP_SUCCESS;
    return true;
}

bool Ring::accept(int fd) {
    io_uring_sqe* s = sqe();
    if (!s) return false;
    io_uring_prep_multishot_accept(s, fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    io_uring_sqe_set_data64(s, ring_tag(RingOp::accept, generation(fd), fd));
    return true;
}

void Ring::forget(int fd, RingOp op, bool armed) {
    if (static_cast<std::size_t>(fd) >= size_) return;
    if (armed) {
        if (io_uring_sqe* s = sqe()) {
            io_uring_prep_cancel64(s, ring_tag(op, generation(fd), fd), IORING_ASYNC_CANCEL_ALL);
            io_uring_sqe_set_data64(s, ring_tag(RingOp::ignored, 0, fd));
            s->flags |= IOSQE_CQE_SKIP_SUCCESS;
        }
    }
    ++generations_[fd];
}

void Ring::submit_and_wait(int timeout_ms) {
    if (!enabled_) {
        enable(ring_);
        enabled_ = true;
    }
    if (timeout_ms == 0) {
        // Submits, and runs the completions' deferred work: they show.
        io_uring_submit_and_get_events(&ring_);
        return;
    }
    if (timeout_ms < 0) {
        io_uring_submit_and_wait(&ring_, 1);
        return;
    }
    __kernel_timespec ts{};
    ts.tv_sec = timeout_ms / 1000;
    ts.tv_nsec = static_cast<long long>(timeout_ms % 1000) * 1'000'000;
    io_uring_cqe* cqe = nullptr;
    io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
}

unsigned Ring::take(RingCompletion* out, unsigned n) {
    unsigned head = 0;
    unsigned count = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(&ring_, head, cqe) {
        if (count == n) break;
        out[count++] = {cqe->user_data, cqe->res, cqe->flags};
    }
    io_uring_cq_advance(&ring_, count);
    return count;
}

#else // !WEFT_HAVE_URING: the loop never has a ring.

std::unique_ptr<Ring> Ring::open(std::size_t, int& error, unsigned, unsigned) {
    error = -ENOSYS;
    return nullptr;
}
Ring::~Ring() = default;
bool Ring::poll(int, std::uint32_t) {
    return false;
}
bool Ring::update_poll(int, std::uint32_t) {
    return false;
}
bool Ring::accept(int) {
    return false;
}
void Ring::forget(int, RingOp, bool) {}
void Ring::submit_and_wait(int) {}
unsigned Ring::take(RingCompletion*, unsigned) {
    return 0;
}

#endif

} // namespace weft
