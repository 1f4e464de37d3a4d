#pragma once
// TimerEvent: fires `ms` after it is started (one-shot: then completes, and
// late subscribers get it at once), or every `ms` while started (periodic:
// each tick notifies with the tick's number, from 1; a tick that comes while
// nobody is subscribed is still counted, so the next number says how many
// passed).

#include "event/event.hpp"
#include "loop/loop.hpp"

namespace weft {

class TimerEvent final : public Event {
public:
    TimerEvent(Loop& loop, std::uint32_t ms, bool periodic = false)
        : Event(loop, kLoopHandle), ms_(ms), periodic_(periodic) {
        timer_.self = this;
        timer_.fire = [](Timer& t) { static_cast<Tick&>(t).self->fired(); };
    }
    ~TimerEvent() override { timer_.cancel(); }

    std::string info() const override {
        return describe(periodic_ ? "periodic timer" : "timer") + ", " + std::to_string(ms_) +
               " ms";
    }

private:
    struct Tick : Timer {
        TimerEvent* self;
    };
    void on_start() override {
        if (!has(kCompleted)) loop().timers().arm(timer_, loop().now() + ms_);
    }
    void on_stop() override { timer_.cancel(); }
    void fired() {
        ++ticks_;
        if (!periodic_) {
            complete(0);
            return;
        }
        loop().timers().arm(timer_, timer_.deadline + ms_);
        notify(static_cast<std::int64_t>(ticks_));
    }

    Tick timer_;
    std::uint32_t ms_;
    bool periodic_;
    std::uint64_t ticks_ = 0;
};

} // namespace weft
