#pragma once
// SignalEvent: notified on its loop when the server receives `signo` (the
// LoopGroup receives SIGTERM, SIGINT, SIGHUP and SIGUSR1 and tells every
// loop). Each delivery notifies with the signal number.

#include "event/event.hpp"
#include "event/event_state.hpp"

namespace weft {

class SignalEvent final : public Event {
public:
    SignalEvent(Loop& loop, int signo, std::uint16_t flags = 0)
        : Event(loop, flags | kLoopHandle), signo_(signo) {}
    ~SignalEvent() override { EventState::of(loop()).remove_signal(*this); }

    int signo() const { return signo_; }
    // Called by the loop's EventState.
    void deliver() { notify(signo_); }

    std::string info() const override { return describe("signal") + " " + std::to_string(signo_); }

private:
    void on_start() override { EventState::of(loop()).add_signal(*this); }
    void on_stop() override { EventState::of(loop()).remove_signal(*this); }

    int signo_;
};

} // namespace weft
