#include "event/event.hpp"

#include "event/event_state.hpp"
#include "loop/loop.hpp"

#include <cassert>
#include <cstdio>

namespace weft {

// --- the callback list --------------------------------------------------------

void CallbackList::add(Callback& callback) {
    if (size_ >= kInline) spill_.push_back(nullptr);
    place(size_++, &callback);
}

void CallbackList::remove_moving(Callback& callback) {
    std::uint32_t hole = callback.index;
    assert(hole < size_ && at(hole) == &callback);
    if (notifying_) {
        // Keep [visited | unvisited | added] contiguous: the hole moves to the
        // end of its region, each region's last entry filling the one before.
        if (hole < visited_) {
            const std::uint32_t from = visited_ - 1;
            if (hole != from) place(hole, at(from));
            hole = visited_ = from;
        }
        if (hole < end_) {
            const std::uint32_t from = end_ - 1;
            if (hole != from) place(hole, at(from));
            hole = end_ = from;
        }
    }
    const std::uint32_t last = --size_;
    if (hole != last) place(hole, at(last));
    if (last >= kInline) spill_.pop_back();
    callback.event = nullptr;
}

// --- events -------------------------------------------------------------------

Event::Event(Loop& loop, std::uint16_t flags) : loop_(loop), flags_(flags) {}

Event::~Event() {
    assert(callbacks_.size() == 0 && "an event died with subscribers");
    assert(!direct_ && "an event died with a direct wait");
    assert(starts_ == 0 && "an event died started");
}

void Event::subscribe(Callback& callback) {
    assert(!callback.event && "a callback subscribes to one event at a time");
    callback.event = this;
    callbacks_.add(callback);
    std::int64_t now = 0;
    if (answers_now(now)) callback.fn(callback, *this, now); // a replay, or ready
}

void Event::start() {
    if (flags_ & kDisposed) return;
    if (starts_++ == 0) {
        if (!(flags_ & kCompleted)) EventState::of(loop_).event_started(*this);
        on_start();
    }
}

void Event::stop() {
    if (starts_ == 0) return; // never steals another starter's count
    if (--starts_ == 0) {
        on_stop();
        // A completed one stopped counting when it completed.
        if (!(flags_ & kCompleted)) EventState::of(loop_).event_stopped(*this);
    }
}

void Event::release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1 && heap_) {
        // The last reference: nobody can be subscribed (each holds none, but
        // disposing closes and subscribers unsubscribe on their wake-up).
        while (starts_ > 0) stop();
        delete this;
    }
}

void Event::dispose() {
    if (flags_ & kDisposed) return;
    if (!(flags_ & kClosed)) close(-ECANCELED);
    flags_ |= kDisposed;
    while (starts_ > 0) stop();
    release();
}

void Event::close(std::int64_t result) {
    if (flags_ & kClosed) return;
    flags_ |= kClosed;
    complete(result);
}

void Event::notify(std::int64_t result) {
    if (hook_) hook_(*this, result, hook_data_);
    if (direct_) direct_->fn(*direct_, *this, result);
    if (callbacks_.notifying()) {
        // Fired again by one of its own callbacks: after this round.
        reentrant_.push_back(result);
        return;
    }
    if (callbacks_.size() == 0) return; // the direct wait alone, or nobody
    // A callback may dispose a heap event: it lives until the end of this.
    // (One on a stack or in an object outlives its subscribers anyway.)
    const bool heap = heap_;
    if (heap) retain();
    callbacks_.notify_each([&](Callback& callback) { callback.fn(callback, *this, result); });
    if (!reentrant_.empty()) [[unlikely]] {
        for (std::size_t i = 0; i < reentrant_.size(); ++i) {
            const std::int64_t again = reentrant_[i];
            callbacks_.notify_each(
                [&](Callback& callback) { callback.fn(callback, *this, again); });
        }
        reentrant_.clear();
    }
    if (heap) release();
}

void Event::complete(std::int64_t result) {
    if (starts_ > 0 && !(flags_ & kCompleted)) EventState::of(loop_).event_stopped(*this);
    flags_ |= kCompleted;
    result_ = result;
    notify(result);
}

std::string Event::describe(const char* kind) const {
    std::string line = kind;
    line += started() ? " started" : " idle";
    if (flags_ & kCompleted) line += " completed(" + std::to_string(result_) + ")";
    if (flags_ & kClosed) line += " closed";
    if (flags_ & kHidden) line += " hidden";
    line += ", " + std::to_string(callbacks_.size() + (direct_ ? 1 : 0)) + " waiting";
    return line;
}

std::string Event::info() const {
    return describe("event");
}

} // namespace weft
