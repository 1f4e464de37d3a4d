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
// connection's end (which the loop watches on that entry), can do without a
// PollEvent and a Waker: a DirectWait takes the readiness the same way and
// wakes it through the loop directly. It is the FastCGI handler's wait on
// its backend, once or twice a PHP request, where the event layer cost each
// wait about 300 instructions more (fastcgi/client_watch.hpp).

#include "event/event.hpp"
#include "loop/loop.hpp"
#include "loop/timer_wheel.hpp"

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

    // The running task's wait for `interest` (or the fd's hang-up) on this
    // fd, on the task's stack: one at a time per proxy. Readiness that is
    // remembered already fires it at once. Otherwise wait() suspends the
    // task until the first readiness that finds it waiting takes what it
    // asked for, or the loop wakes it otherwise. Readiness that comes while
    // it does not wait (woken for something else) stays remembered, as for
    // a PollEvent whose waiter was woken otherwise.
    class DirectWait {
    public:
        DirectWait(PollProxy& proxy, std::uint8_t interest);
        ~DirectWait();
        DirectWait(const DirectWait&) = delete;
        DirectWait& operator=(const DirectWait&) = delete;

        // 0 when it fired (now or before), else what the loop woke the task
        // with: with `watch_peer`, the end of the task's own connection
        // (kPeerClosed or kHangup, as Op::suspend_watching_peer says);
        // -ETIMEDOUT after timeout_ms, on the task's wait_timer as a
        // Waker's timeout; -ECANCELED; or an error. error() at once.
        std::int64_t wait(std::uint32_t timeout_ms, bool watch_peer);
        bool fired() const { return fired_; }
        // What the loop said when asked to watch the fd: the wait cannot
        // fire. 0 when it watches it.
        int error() const { return error_; }

    private:
        friend class PollProxy;
        static void on_timeout(Timer& timer);

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
