#pragma once
// PollEvent and PollProxy: several coroutines waiting on one fd.
//
// A PollProxy watches one fd for as long as it lives; each PollEvent is one
// waiter's interest (readable, writable or both; or kPeerClosed: the peer's
// end of stream or an error, not its bytes: a watch for a client that
// leaves, which its next request must not wake). The loop registers the
// union of what the proxy's events ever asked (edge-triggered, grown only),
// once per fd. Readiness is remembered until a waiter takes it, so an edge is
// never lost; a hang-up or error wakes every waiter, writers included, and
// stays.
//
// As with io::read, try the syscall first and await on EAGAIN: a remembered
// edge can wake a waiter whose bytes were read meanwhile.
//
// A coroutine that waits for this one fd alone, and at most its own
// connection's end, can wait directly (event/direct_wait.hpp): a DirectWait
// takes the readiness the same way, without a PollEvent and a Waker.

#include "event/event.hpp"
#include "loop/loop.hpp"

namespace weft {

class PollEvent;

class PollProxy final : private FdWatcher {
public:
    PollProxy(Loop& loop, int fd);
    // Stops watching (a watched foreign fd leaves epoll); no PollEvent of it
    // may be started then.
    ~PollProxy();
    PollProxy(const PollProxy&) = delete;
    PollProxy& operator=(const PollProxy&) = delete;

    int fd() const { return fd_; }
    Loop& loop() const { return loop_; }

    // The running task's direct wait for `interest` (or the fd's hang-up) on
    // this fd, on its stack: one at a time per proxy. Readiness remembered
    // already fires it at once; else the first that comes while the task is
    // in wait() takes what it asked for (and wakes it, if it still waits).
    class DirectWait {
    public:
        DirectWait(PollProxy& proxy, std::uint8_t interest);
        ~DirectWait();
        DirectWait(const DirectWait&) = delete;
        DirectWait& operator=(const DirectWait&) = delete;

        // 0 when it fired (now or before), else what the loop woke the task
        // with (suspend_directly); error() at once.
        std::int64_t wait(std::uint32_t timeout_ms, bool watch_peer);
        bool fired() const { return fired_; }
        // What the loop said when asked to watch the fd: the wait cannot
        // fire. 0 when it watches it.
        int error() const { return error_; }

    private:
        friend class PollProxy;

        PollProxy& proxy_;
        Task* task_;
        std::uint8_t interest_;
        bool fired_ = false;
        int error_ = 0; // a regular file, a closed fd
    };

private:
    friend class PollEvent;
    int attach(PollEvent& event);
    void detach(PollEvent& event);
    int watch(std::uint8_t interest);
    bool take(std::uint8_t interest, std::int64_t& result);
    static void on_ready(FdWatcher& self, std::uint8_t ready);

    Loop& loop_;
    int fd_;
    std::uint8_t ready_ = 0; // seen, not yet taken, plus kPeerClosed/kHungUp
    PollEvent* first_ = nullptr;
    PollEvent* cursor_ = nullptr; // the next to visit while notifying
    DirectWait* direct_ = nullptr;
};

class PollEvent final : public Event {
public:
    PollEvent(PollProxy& proxy, std::uint8_t interest)
        : Event(proxy.loop(), kLoopHandle), proxy_(proxy), interest_(interest) {}
    ~PollEvent() override;

    std::string info() const override;

private:
    friend class PollProxy;
    void on_start() override;
    void on_stop() override;
    bool ready_now(std::int64_t& result) override;

    PollProxy& proxy_;
    std::uint8_t interest_;
    bool attached_ = false;
    PollEvent* prev_ = nullptr;
    PollEvent* next_ = nullptr;
};

} // namespace weft
