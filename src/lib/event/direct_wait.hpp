#pragma once
// Direct waits: a coroutine's wait for one thing (an fd's readiness, one
// event), and at most its own connection's end, that wakes it through the
// loop itself rather than through a Waker. Waiting so costs a wait a few
// dozen instructions instead of a few hundred (the Waker's subscriptions
// and status; for an fd, a PollEvent's start, stop and notify walk): the
// FastCGI handler's waits, in the upstream's queue and on the backend, are
// direct (fastcgi/client_watch.hpp). A wait on more than that is a Waker's.
//
// The thing's waker fires a direct wait while the task is in it (from the
// suspend until it runs again: Task::direct_wait), and wakes the task with
// Loop::wake(…, 0) if it still waits. What fires it after the loop woke the
// task for something else wins, as with a Waker: a cancel that came first
// then ends the task's next wait instead (Task::pending), and a timeout or
// the client's end is dropped (the end is sticky: the next wait that
// watches it sees it again). Outside its wait (before, after) nothing fires
// it: an fd's readiness stays remembered, a completed event completed. The
// timeout is the task's wait_timer, as a Waker's is: its callback ends only
// a direct wait that is suspended, so a deadline left armed by an earlier
// wait ends no later one. One direct wait at a time per task.

#include "event/event.hpp"
#include "loop/loop.hpp"

#include <cstdint>

namespace weft {

// Suspends the running task in the direct wait `wait` until the loop wakes
// it: with 0 by what it waits for, the end of its own connection with
// `watch_peer` (kPeerClosed or kHangup, as Op::suspend_watching_peer says),
// -ETIMEDOUT after timeout_ms, -ECANCELED, or an error. Then `fired` (what
// the wait's waker says) wins: 0, moving a cancel to the next wait.
std::int64_t suspend_directly(Task& task, const void* wait, const bool& fired,
                              std::uint32_t timeout_ms, bool watch_peer);

// Whether `wait` may be fired now (the task is in it), and whether the task
// still waits there (a firing then wakes it).
inline bool in_direct_wait(const Task& task, const void* wait) {
    return task.direct_wait == wait;
}
inline bool waits_directly(const Task& task) {
    return task.direct_wait != nullptr && task.waiting;
}

// The running task's direct wait for one event, on its stack: started for
// as long as it lives, and the event's direct wait (Event::direct();
// subscribed when another has that) until it fires (an event that answers
// at once, a completed one, fires it then).
class EventWait : private Callback {
public:
    explicit EventWait(Event& event);
    ~EventWait();
    EventWait(const EventWait&) = delete;
    EventWait& operator=(const EventWait&) = delete;

    // 0 when the event fired (now or before), else what the loop woke the
    // task with (suspend_directly).
    std::int64_t wait(std::uint32_t timeout_ms, bool watch_peer);
    bool fired() const { return fired_; }
    // The event's result, once fired.
    std::int64_t result() const { return result_; }

private:
    static void on_event(Callback& self, Event& event, std::int64_t result);

    Event& event_;
    Task* task_;
    std::int64_t result_ = 0;
    bool fired_ = false;
    bool subscribing_ = true;
    bool direct_ = false; // the event's direct wait (Event::direct()), not a subscriber
};

} // namespace weft
