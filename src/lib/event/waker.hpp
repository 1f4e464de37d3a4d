#pragma once
// Waker: how a coroutine waits on several events at once.
//
// A Waker lives on the waiting coroutine's stack for the length of one wait.
// It subscribes to each event (and starts it), suspends the coroutine, and
// on the first event to fire (await_any) or the last (await_all), or on its
// timeout, queues the coroutine on its loop. When the coroutine runs again
// the Waker unsubscribes and stops everything: each an O(1) removal. Its
// first three subscriptions are inline and its timeout is its task's
// wait_timer (loop.hpp), so a typical wait (an fd, a timer, a channel)
// allocates nothing, and a timeout mostly only pushes a deadline back.
//
// Status: NO_STATUS while subscribing (an event that is already complete
// answers then, and the coroutine does not suspend at all: nothing is lost
// between subscribe and suspend), WAITING while suspended, QUEUED once woken,
// RESULT when it has run again, IGNORED if the coroutine was destroyed while
// queued (it is never resumed; its stack unwinds and the Waker unsubscribes).
//
// Cancellation (Loop::cancel) ends a wait with AwaitResult::kCancelled; one
// that arrives after a wake-up was queued leaves the woken result alone and
// ends the coroutine's next wait instead. The other way round too: an event
// that fires after the loop queued the coroutine with a cancel or a timeout
// wins, and the cancel or timeout moves on to the next wait.
//
// The moment a wait is decided the Waker unsubscribes from every event, so an
// event that fires again before the coroutine runs (a PollEvent with fresh
// readiness) hands it to a waiter that will use it, not to this one. A heap
// event is retained while subscribed: disposing it meanwhile cannot free it.

#include "event/event.hpp"
#include "loop/loop.hpp"
#include "loop/timer_wheel.hpp"

#include <initializer_list>
#include <memory>
#include <span>
#include <string>

namespace weft {

struct AwaitResult {
    static constexpr int kTimeout = -1;   // value -ETIMEDOUT
    static constexpr int kCancelled = -2; // value -ECANCELED
    static constexpr int kError = -3;     // value: what the loop woke it with
    // The peer of the task's own connection ended its side, or the
    // connection failed (Waker::resume_when_peer_ends): value kPeerClosed or
    // kHangup.
    static constexpr int kPeerEnd = -4;

    int index;          // the event that fired (its place in the list), or one of the above
    std::int64_t value; // that event's result, or the error
    bool fired() const { return index >= 0; }
};

class Waker {
public:
    enum class Status : std::uint8_t { no_status, waiting, queued, result, ignored };
    enum class Mode : std::uint8_t { any, all };

    // For the running coroutine on its loop, with room for `events` events.
    Waker(Mode mode, std::size_t events);
    ~Waker();
    Waker(const Waker&) = delete;
    Waker& operator=(const Waker&) = delete;

    // Adds `event` to what this wait waits for: subscribes and starts it.
    // Its index in the AwaitResult.
    int resume_when(Event& event);
    // Adds the end of the running task's own connection: its peer's end of
    // stream, a reset or an error (AwaitResult::kPeerEnd). The loop watches
    // it on the connection's entry, as it does a read (no event, nothing to
    // subscribe or start); sticky, so once seen every such wait ends at
    // once. Only in a task that serves a connection (Task::fd).
    void resume_when_peer_ends();
    // Suspends until the wait is over; `timeout_ms` < 0 waits without limit.
    AwaitResult wait(std::int64_t timeout_ms);

    Status status() const { return status_; }
    // One line: the coroutine, its status and the info() of each event.
    std::string info() const;

private:
    struct Subscription : Callback {
        Waker* waker;
        Event* target; // what it subscribed to, until released (Callback::event
                       // is cleared as soon as the wait is decided)
        std::uint32_t slot;
        bool fired;
    };
    static constexpr std::size_t kInline = 3;

    static void on_event(Callback& callback, Event& event, std::int64_t result);
    static void on_timeout(Timer& timer);
    void finish(int index, std::int64_t value);
    void release_all();
    Subscription& slot(std::size_t i) { return i < kInline ? inline_[i] : spill_[i - kInline]; }
    const Subscription& slot(std::size_t i) const {
        return i < kInline ? inline_[i] : spill_[i - kInline];
    }

    Loop& loop_;
    Coroutine& coroutine_;
    Task* task_;
    Mode mode_;
    Status status_ = Status::no_status;
    std::uint32_t count_ = 0;
    std::uint32_t fired_count_ = 0;
    AwaitResult result_{AwaitResult::kError, 0};
    bool timed_ = false;         // wait() was given a timeout: the task's wait_timer
    bool watches_peer_ = false;  // resume_when_peer_ends()
    std::uint64_t deadline_ = 0; // then ends it at this time

    Subscription inline_[kInline];
    std::unique_ptr<Subscription[]> spill_;
};

// Waits until one of `events` fires: which one, and its result. Only that
// one counts; the others are unsubscribed.
AwaitResult await_any(std::span<Event* const> events, std::int64_t timeout_ms = -1);
AwaitResult await_any(std::initializer_list<Event*> events, std::int64_t timeout_ms = -1);
// Waits until every one of `events` has fired: index 0 and value 0 then.
AwaitResult await_all(std::span<Event* const> events, std::int64_t timeout_ms = -1);
AwaitResult await_all(std::initializer_list<Event*> events, std::int64_t timeout_ms = -1);
// Waits for one event.
AwaitResult await(Event& event, std::int64_t timeout_ms = -1);

} // namespace weft
