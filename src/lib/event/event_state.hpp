#pragma once
// The event layer's state on one loop: how many events are started (and how
// many of those count as work), the signal events to tell, and deadlock
// detection.
//
// Deadlock: the loop is about to wait with no timer armed, every task is
// suspended on events (none waits on an fd), no started loop handle that is
// not HIDDEN and not spent (a poll, signal or trigger event) could wake one,
// and nothing outside the loop has said it will post work to it (a
// Broadcast subscriber, say: see ExternalSource). Nothing can ever run
// again; the report names each task and what it awaits. On by default in
// builds with asserts.

#include "loop/loop.hpp"

#include <functional>
#include <string>
#include <vector>

namespace weft {

class Event;
class SignalEvent;

class EventState final : public LoopExtension {
public:
    // The state of `loop`, made on first use.
    static EventState& of(Loop& loop);

    void event_started(const Event& event);
    void event_stopped(const Event& event);
    std::size_t started_events() const { return started_; }
    // Started loop handles that are not hidden.
    std::size_t started_visible() const { return visible_; }

    // Something that feeds this loop's events from other threads through
    // Loop::post is a way out of a deadlock while it lives.
    void add_external_source() { ++external_; }
    void remove_external_source() { --external_; }

    void add_signal(SignalEvent& event);
    void remove_signal(SignalEvent& event);
    void on_signal(int signo) override;

    void detect_deadlocks(bool on) { detect_ = on; }
    // Where reports go (stderr unless set); one report per deadlock.
    void set_deadlock_reporter(std::function<void(const std::string&)> reporter) {
        reporter_ = std::move(reporter);
    }
    void on_idle() override;

private:
    explicit EventState(Loop& loop) : loop_(loop) {}

    Loop& loop_;
    std::size_t started_ = 0;
    std::size_t visible_ = 0;
    std::size_t external_ = 0;
    std::vector<SignalEvent*> signals_;
#ifdef NDEBUG
    bool detect_ = false;
#else
    bool detect_ = true;
#endif
    bool reported_ = false;
    std::function<void(const std::string&)> reporter_;
};

} // namespace weft
