#pragma once
// TriggerEvent: fired from any thread, notified on its own loop's thread.
// Fires that come before the loop gets to it are delivered as one
// notification whose result is how many there were.
//
// Make it with Event::make<TriggerEvent>(loop): each pending delivery holds
// a reference, so the event outlives a fire() in flight even if disposed.

#include "event/event.hpp"
#include "loop/loop.hpp"

#include <atomic>

namespace weft {

class TriggerEvent final : public Event {
public:
    explicit TriggerEvent(Loop& loop) : Event(loop, kLoopHandle) {}

    // Any thread.
    void fire() {
        if (pending_.fetch_add(1, std::memory_order_acq_rel) > 0) return;
        retain();
        loop().post([this] {
            const std::uint64_t count = pending_.exchange(0, std::memory_order_acq_rel);
            if (!has(kClosed)) notify(static_cast<std::int64_t>(count));
            release();
        });
    }

    // On its own loop's thread: notifies now, skipping the trip through the
    // loop's post queue (an eventfd write and read).
    void fire_here() {
        if (!has(kClosed)) notify(1);
    }

    std::string info() const override { return describe("trigger"); }

private:
    std::atomic<std::uint64_t> pending_{0};
};

} // namespace weft
