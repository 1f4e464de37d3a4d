#include "event/direct_wait.hpp"

#include "coro/coroutine.hpp"
#include "loop/timer_wheel.hpp"

#include <cassert>

namespace weft {

namespace {

void on_timeout(Timer& timer) {
    // Armed by a wait that may be over: it ends only a direct wait now
    // suspended, whose deadline it then is (arming set it so).
    Task* task = static_cast<TaskTimer&>(timer).task;
    if (waits_directly(*task)) Loop::current()->wake(*task->coroutine, -ETIMEDOUT);
}

} // namespace

std::int64_t suspend_directly(Task& task, const void* wait, const bool& fired,
                              std::uint32_t timeout_ms, bool watch_peer) {
    Loop& loop = *Loop::current();
    // Left armed by the last wait, it is mostly only pushed back.
    task.wait_timer.fire = on_timeout;
    loop.timers().arm(task.wait_timer, loop.now() + timeout_ms);
    task.direct_wait = wait;
    const std::int64_t woke =
        weft::yield(yield_value(watch_peer ? Op::suspend_watching_peer : Op::suspend));
    task.direct_wait = nullptr;
    if (!fired) return woke;
    if (woke == -ECANCELED && task.pending == 0) task.pending = woke;
    return 0;
}

EventWait::EventWait(Event& event) : event_(event), task_(Loop::current_task()) {
    assert(task_ && "an EventWait outside a loop's coroutine");
    fn = on_event;
    if (event.has(Event::kHeap)) event.retain(); // disposed meanwhile, it is not freed
    event.start();
    // The event's direct wait when it has none (mostly): told without a
    // subscription, which costs a wait and its firing about 60 instructions.
    direct_ = event.direct() == nullptr;
    std::int64_t now = 0;
    if (!direct_) {
        event.subscribe(*this); // may fire at once
    } else {
        event.set_direct(this);
        if (event.answers_now(now)) on_event(*this, event, now);
    }
    subscribing_ = false;
}

EventWait::~EventWait() {
    if (!direct_)
        event_.unsubscribe(*this);
    else if (event_.direct() == this) // not fired: still its direct wait
        event_.set_direct(nullptr);
    event_.stop();
    if (event_.has(Event::kHeap)) event_.release();
    if (task_->direct_wait == this) task_->direct_wait = nullptr; // unwound in its wait
}

void EventWait::on_event(Callback& self, Event& event, std::int64_t result) {
    auto& w = static_cast<EventWait&>(self);
    if (w.fired_ || !(w.subscribing_ || in_direct_wait(*w.task_, &w))) return;
    w.fired_ = true;
    w.result_ = result;
    // Decided: a later firing goes to a waiter that will use it, and the
    // event is no longer heard for this one (a PollEvent that is takes the
    // fd's next readiness, which this wait would then drop).
    if (w.direct_)
        event.set_direct(nullptr);
    else
        event.unsubscribe(self);
    if (w.task_->waiting) event.loop().wake(*w.task_->coroutine, 0);
}

std::int64_t EventWait::wait(std::uint32_t timeout_ms, bool watch_peer) {
    if (fired_) return 0;
    return suspend_directly(*task_, this, fired_, timeout_ms, watch_peer);
}

} // namespace weft
