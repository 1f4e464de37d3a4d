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

private:
    friend class PollEvent;
    int attach(PollEvent& event);
    void detach(PollEvent& event);
    static void on_ready(FdWatcher& self, std::uint8_t ready);

    Loop& loop_;
    int fd_;
    std::uint8_t ready_ = 0; // seen, not yet taken, plus kPeerClosed/kHungUp
    PollEvent* first_ = nullptr;
    PollEvent* cursor_ = nullptr; // the next to visit while notifying
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
