#include "event/waker.hpp"

#include <cassert>
#include <utility>

namespace weft {

Waker::Waker(Mode mode, std::size_t events)
    : loop_(*Loop::current()), coroutine_(*Coroutine::current()), task_(Loop::current_task()),
      mode_(mode) {
    assert(task_ && "await outside a loop's coroutine");
    if (events > kInline) spill_ = std::make_unique<Subscription[]>(events - kInline);
}

Waker::~Waker() {
    // Destroyed while queued: its coroutine was destroyed and will never run.
    if (status_ == Status::queued) status_ = Status::ignored;
    release_all();
    if (task_->waiter == this) task_->waiter = nullptr;
}

int Waker::resume_when(Event& event) {
    const auto index = static_cast<int>(count_);
    Subscription& s = slot(count_);
    s.fn = on_event;
    s.waker = this;
    s.target = &event;
    s.slot = count_++;
    s.fired = false;
    if (event.has(Event::kHeap)) event.retain();
    event.start();
    if (status_ == Status::no_status || status_ == Status::waiting)
        event.subscribe(s); // may answer at once (replay)
    return index;
}

void Waker::resume_when_peer_ends() {
    assert(task_->fd >= 0 && "the peer's end of a task without a connection");
    watches_peer_ = true;
}

void Waker::on_event(Callback& callback, Event&, std::int64_t result) {
    auto& s = static_cast<Subscription&>(callback);
    Waker& w = *s.waker;
    if (s.fired || (w.status_ != Status::no_status && w.status_ != Status::waiting)) return;
    s.fired = true;
    if (w.mode_ == Mode::any) {
        w.finish(static_cast<int>(s.slot), result);
    } else if (++w.fired_count_ == w.count_ && w.status_ == Status::waiting) {
        w.finish(0, 0); // while subscribing count_ is not final: wait() checks
    }
}

void Waker::on_timeout(Timer& timer) {
    // The task's timer, left armed by a wait that is over: only the wait
    // suspended now, if it armed it, times out (its deadline is then the
    // timer's: arming it set it so).
    auto* w = static_cast<Waker*>(static_cast<TaskTimer&>(timer).task->waiter);
    if (!w || !w->timed_ || w->status_ != Status::waiting) return;
    w->finish(AwaitResult::kTimeout, -ETIMEDOUT);
}

void Waker::finish(int index, std::int64_t value) {
    // Decided: let go of every event now (see the header).
    for (std::uint32_t i = 0; i < count_; ++i)
        if (Event* event = slot(i).event) event->unsubscribe(slot(i));
    result_ = {index, value};
    if (status_ == Status::no_status) {
        status_ = Status::result; // answered while subscribing: no suspend
        return;
    }
    status_ = Status::queued;
    if (task_->waiting) {
        loop_.wake(coroutine_, 0);
    } else if (task_->queued &&
               (task_->wake_value == -ECANCELED || task_->wake_value == -ETIMEDOUT)) {
        // The loop queued it first with a cancel or a timeout: this result
        // wins, and that ends the next wait instead. (The peer's end, queued
        // first, is simply seen again by the next wait that watches it.)
        task_->pending = std::exchange(task_->wake_value, 0);
    }
}

void Waker::release_all() {
    // The timeout stays armed (Task::wait_timer).
    for (std::uint32_t i = 0; i < count_; ++i) {
        Subscription& s = slot(i);
        if (Event* event = std::exchange(s.target, nullptr)) {
            event->unsubscribe(s);
            event->stop();
            if (event->has(Event::kHeap)) event->release();
        }
    }
    count_ = 0;
}

AwaitResult Waker::wait(std::int64_t timeout_ms) {
    if (mode_ == Mode::all && fired_count_ == count_ && status_ == Status::no_status) {
        result_ = {0, 0}; // every one answered while subscribing (or none to wait for)
        status_ = Status::result;
    }
    if (status_ == Status::no_status) {
        if (timeout_ms >= 0) {
            timed_ = true;
            deadline_ = loop_.now() + static_cast<std::uint64_t>(timeout_ms);
            task_->wait_timer.fire = on_timeout;
            loop_.timers().arm(task_->wait_timer, deadline_);
        }
        status_ = Status::waiting;
        task_->waiter = this;
        const std::int64_t woken =
            weft::yield(yield_value(watches_peer_ ? Op::suspend_watching_peer : Op::suspend));
        task_->waiter = nullptr;
        if (status_ == Status::waiting) {
            // Woken by the loop, not by an event: the peer's end, cancelled,
            // or the connection's own timeout, or an error.
            if (watches_peer_ && (woken > 0 || woken == kHangup)) {
                result_ = {AwaitResult::kPeerEnd, woken};
            } else if (woken == -ECANCELED) {
                result_ = {AwaitResult::kCancelled, woken};
            } else {
                result_ = {AwaitResult::kError, woken};
            }
        }
        status_ = Status::result;
    }
    release_all();
    return result_;
}

std::string Waker::info() const {
    static constexpr const char* kStatus[] = {"no status", "waiting", "queued", "result",
                                              "ignored"};
    std::string line = "coroutine " + std::to_string(coroutine_.id()) + " " +
                       kStatus[static_cast<int>(status_)] +
                       (mode_ == Mode::any ? " on any of {" : " on all of {");
    for (std::uint32_t i = 0; i < count_; ++i) {
        const Subscription& s = slot(i);
        if (i) line += "; ";
        line += s.target ? s.target->info() : std::string("(released)");
    }
    line += "}";
    if (watches_peer_) line += " or its connection's end";
    if (timed_ && status_ == Status::waiting) line += " with a timeout";
    return line;
}

namespace {

AwaitResult wait_on(Waker::Mode mode, std::span<Event* const> events, std::int64_t timeout_ms) {
    Waker waker(mode, events.size());
    for (Event* event : events) waker.resume_when(*event);
    return waker.wait(timeout_ms);
}

} // namespace

AwaitResult await_any(std::span<Event* const> events, std::int64_t timeout_ms) {
    return wait_on(Waker::Mode::any, events, timeout_ms);
}
AwaitResult await_any(std::initializer_list<Event*> events, std::int64_t timeout_ms) {
    return wait_on(Waker::Mode::any, {events.begin(), events.size()}, timeout_ms);
}
AwaitResult await_all(std::span<Event* const> events, std::int64_t timeout_ms) {
    return wait_on(Waker::Mode::all, events, timeout_ms);
}
AwaitResult await_all(std::initializer_list<Event*> events, std::int64_t timeout_ms) {
    return wait_on(Waker::Mode::all, {events.begin(), events.size()}, timeout_ms);
}
AwaitResult await(Event& event, std::int64_t timeout_ms) {
    Event* one[] = {&event};
    return wait_on(Waker::Mode::any, one, timeout_ms);
}

} // namespace weft
