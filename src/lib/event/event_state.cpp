#include "event/event_state.hpp"

#include "event/event.hpp"
#include "event/signal_event.hpp"
#include "event/waker.hpp"

#include <algorithm>
#include <cstdio>

namespace weft {

EventState& EventState::of(Loop& loop) {
    if (auto* state = static_cast<EventState*>(loop.extension())) return *state;
    auto* state = new EventState(loop);
    loop.set_extension(std::unique_ptr<LoopExtension>(state));
    return *state;
}

void EventState::event_started(const Event& event) {
    ++started_;
    if (event.has(Event::kLoopHandle) && !event.has(Event::kHidden)) ++visible_;
}

void EventState::event_stopped(const Event& event) {
    --started_;
    if (event.has(Event::kLoopHandle) && !event.has(Event::kHidden)) --visible_;
}

void EventState::add_signal(SignalEvent& event) {
    if (std::find(signals_.begin(), signals_.end(), &event) == signals_.end())
        signals_.push_back(&event);
}

void EventState::remove_signal(SignalEvent& event) {
    signals_.erase(std::remove(signals_.begin(), signals_.end(), &event), signals_.end());
}

void EventState::on_signal(int signo) {
    // A copy: a notified coroutine does not run now, but a callback might
    // stop an event.
    const std::vector<SignalEvent*> listening = signals_;
    for (SignalEvent* event : listening)
        if (event->signo() == signo &&
            std::find(signals_.begin(), signals_.end(), event) != signals_.end())
            event->deliver();
}

void EventState::on_idle() {
    if (!detect_ || loop_.live_tasks() == 0 || visible_ > 0 || external_ > 0) {
        reported_ = false;
        return;
    }
    bool stuck = true;
    loop_.for_each_task([&](const Task& task) {
        // One that waits on an fd can be woken by it.
        if (!task.waiting || task.wait_fd >= 0 || task.queued) stuck = false;
    });
    if (!stuck || reported_) return;
    reported_ = true;
    std::string report = "weft: deadlock on loop " + std::to_string(loop_.index()) + ": " +
                         std::to_string(loop_.live_tasks()) +
                         " coroutines wait and nothing can wake them\n";
    loop_.for_each_task([&](const Task& task) {
        report += "  ";
        report += task.waiter ? static_cast<const Waker*>(task.waiter)->info()
                              : "coroutine " + std::to_string(task.coroutine->id()) +
                                    " suspended outside any await";
        report += "\n";
    });
    if (reporter_) {
        reporter_(report);
    } else {
        std::fputs(report.c_str(), stderr);
    }
}

} // namespace weft
