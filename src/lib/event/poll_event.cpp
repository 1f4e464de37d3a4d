#include "event/poll_event.hpp"

#include "event/direct_wait.hpp"

#include <cassert>

namespace weft {

PollProxy::PollProxy(Loop& loop, int fd) : FdWatcher{on_ready}, loop_(loop), fd_(fd) {}

PollProxy::~PollProxy() {
    assert(!first_ && "a PollProxy died with started PollEvents");
    assert(!direct_ && "a PollProxy died with a DirectWait");
    loop_.unwatch_fd(fd_, *this);
}

int PollProxy::watch(std::uint8_t interest) {
    // Watched by this proxy for that interest already (every wait after
    // the first on it): what watch_fd would find, without the call.
    if (loop_.table().fits(fd_)) {
        const FdEntry& entry = loop_.table()[fd_];
        if (entry.data == this && (entry.registered & interest) == interest) return 0;
    }
    return loop_.watch_fd(fd_, *this, interest);
}

bool PollProxy::take(std::uint8_t interest, std::int64_t& result) {
    if (ready_ & kHungUp) { // terminal, for every waiter
        result = kHangup;
        return true;
    }
    const std::uint8_t ready = ready_ & interest;
    if (!ready) return false;
    ready_ &= ~(ready & (kReadable | kWritable)); // taken; the peer's end stays
    result = ready;
    return true;
}

int PollProxy::attach(PollEvent& event) {
    event.prev_ = nullptr;
    event.next_ = first_;
    if (first_) first_->prev_ = &event;
    first_ = &event;
    return watch(event.interest_);
}

void PollProxy::detach(PollEvent& event) {
    if (cursor_ == &event) cursor_ = event.next_;
    if (event.prev_) event.prev_->next_ = event.next_;
    if (event.next_) event.next_->prev_ = event.prev_;
    if (first_ == &event) first_ = event.next_;
    event.prev_ = event.next_ = nullptr;
}

void PollProxy::on_ready(FdWatcher& self, std::uint8_t ready) {
    auto& proxy = static_cast<PollProxy&>(self);
    proxy.ready_ |= ready;
    if (DirectWait* direct = proxy.direct_) {
        std::int64_t result = 0;
        Task& task = *direct->task_;
        if (in_direct_wait(task, direct) && proxy.take(direct->interest_, result)) {
            direct->fired_ = true;
            proxy.direct_ = nullptr;
            if (task.waiting) proxy.loop_.wake(*task.coroutine, 0);
        }
    }
    // The list may change under the callbacks: a cursor kept in the proxy
    // steps over events detached meanwhile; ones attached meanwhile (at the
    // head) wait for the next edge, which readiness memory gives them.
    proxy.cursor_ = proxy.first_;
    while (PollEvent* event = proxy.cursor_) {
        proxy.cursor_ = event->next_;
        // Only an event heard takes readiness: one whose waiter was
        // woken by something else must leave it for the next waiter.
        std::int64_t result = 0;
        if (event->heard() && event->ready_now(result)) event->notify(result);
    }
}

PollEvent::~PollEvent() {
    if (attached_) proxy_.detach(*this);
}

void PollEvent::on_start() {
    attached_ = true;
    if (const int error = proxy_.attach(*this)) {
        // Not watchable (a regular file, a closed fd): say so at once.
        proxy_.detach(*this);
        attached_ = false;
        close(error);
    }
}

void PollEvent::on_stop() {
    if (!attached_) return;
    proxy_.detach(*this);
    attached_ = false;
}

bool PollEvent::ready_now(std::int64_t& result) {
    return proxy_.take(interest_, result);
}

PollProxy::DirectWait::DirectWait(PollProxy& proxy, std::uint8_t interest)
    : proxy_(proxy), task_(Loop::current_task()), interest_(interest) {
    assert(task_ && "a DirectWait outside a loop's coroutine");
    assert(!proxy.direct_ && "two DirectWaits on one PollProxy");
    std::int64_t result = 0;
    if (proxy.take(interest, result)) {
        fired_ = true;
        return;
    }
    error_ = proxy.watch(interest);
    if (error_ == 0) proxy.direct_ = this;
}

PollProxy::DirectWait::~DirectWait() {
    if (proxy_.direct_ == this) proxy_.direct_ = nullptr;
    if (task_->direct_wait == this) task_->direct_wait = nullptr; // unwound in its wait
}

std::int64_t PollProxy::DirectWait::wait(std::uint32_t timeout_ms, bool watch_peer) {
    if (fired_) return 0;
    if (error_) return error_;
    return suspend_directly(*task_, this, fired_, timeout_ms, watch_peer);
}

std::string PollEvent::info() const {
    const char* what = interest_ == (kReadable | kWritable) ? "read/write"
                       : interest_ == kReadable             ? "read"
                       : interest_ == kWritable             ? "write"
                                                            : "peer's end";
    return describe("poll") + " fd " + std::to_string(proxy_.fd()) + " " + what;
}

} // namespace weft
