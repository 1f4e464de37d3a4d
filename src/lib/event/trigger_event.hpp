#pragma once
// TriggerEvent: fired from any thread, notified on its own loop's thread.
// Fires that come before the loop gets to it are delivered as one
// notification whose result is how many there were.
//
// Make it with Event::make<TriggerEvent>(loop): each pending delivery holds
// a reference, so the event outlives a fire() in flight even if disposed.
//
// A trigger made `once` fires at most once and then stays complete: a
// waiter that was not subscribed at that moment (woken by another event of
// an await_any, and about to await this one again) gets the result when it
// subscribes, instead of waiting for a fire that already came. An upstream's
// queued request waits on one: the backend it was handed must not be lost.

#include "event/event.hpp"
#include "loop/loop.hpp"

#include <atomic>

namespace weft {

class TriggerEvent final : public Event {
public:
    enum class Fires : bool { again, once };
    explicit TriggerEvent(Loop& loop, Fires fires = Fires::again)
        : Event(loop, kLoopHandle), once_(fires == Fires::once) {}

    // Any thread.
    void fire() {
        if (pending_.fetch_add(1, std::memory_order_acq_rel) > 0) return;
        retain();
        loop().post([this] {
            const std::uint64_t count = pending_.exchange(0, std::memory_order_acq_rel);
            deliver(static_cast<std::int64_t>(count));
            release();
        });
    }

    // On its own loop's thread: notifies now, skipping the trip through the
    // loop's post queue (an eventfd write and read).
    void fire_here() { deliver(1); }

    std::string info() const override { return describe("trigger"); }

    // Makes a fired trigger new again, for one more wait, when nothing can
    // touch it any more: no other reference (a fire() in flight holds one),
    // nobody to hear it (a subscriber, a direct wait), not started, not
    // disposed. False (left as it is) otherwise.
    bool rearm() {
        if (!only_reference() || heard() || started() || has(kDisposed)) return false;
        reopen();
        pending_.store(0, std::memory_order_relaxed);
        return true;
    }

private:
    void deliver(std::int64_t count) {
        if (has(kClosed) || has(kCompleted)) return;
        if (once_) {
            complete(count);
        } else {
            notify(count);
        }
    }

    const bool once_;
    std::atomic<std::uint64_t> pending_{0};
};

} // namespace weft
