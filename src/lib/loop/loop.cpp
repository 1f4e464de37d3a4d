#include "loop/loop.hpp"

#include "loop/fs_watch.hpp"
#include "loop/ring.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>

namespace weft {

namespace {

constexpr int kMaxEvents = 256;
constexpr int kAcceptBatch = 64;
constexpr int kReadyBatches = 64;
constexpr std::uint32_t kAcceptPauseMs = 100;

// The epoll events for an interest (kReadable | kWritable | kPeerClosed):
// edge-triggered, hang-ups reported. kPeerClosed alone asks for the peer's
// end of stream and its errors but not its bytes: a watch for a client that
// leaves mid-request, which its next (pipelined) request must not wake.
constexpr std::uint32_t kEpollEvents[8] = {
    EPOLLET,
    EPOLLIN | EPOLLRDHUP | EPOLLET,
    EPOLLOUT | EPOLLET,
    EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
    EPOLLRDHUP | EPOLLET,
    EPOLLIN | EPOLLRDHUP | EPOLLET,
    EPOLLOUT | EPOLLRDHUP | EPOLLET,
    EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
};

// The ring's multishot poll for an interest: what kEpollEvents asks, as a
// poll mask (the same bits); a completion per wake-up, as EPOLLET's events.
constexpr std::uint32_t kRingPollEvents[8] = {
    0,
    POLLIN | POLLRDHUP,
    POLLOUT,
    POLLIN | POLLOUT | POLLRDHUP,
    POLLRDHUP,
    POLLIN | POLLRDHUP,
    POLLOUT | POLLRDHUP,
    POLLIN | POLLOUT | POLLRDHUP,
};

std::uint8_t readiness_of(std::uint32_t events) {
    std::uint8_t ready = 0;
    if (events & EPOLLIN) ready |= kReadable;
    if (events & EPOLLOUT) ready |= kWritable;
    if (events & EPOLLRDHUP) ready |= kPeerClosed | kReadable;
    if (events & (EPOLLHUP | EPOLLERR)) ready |= kHungUp | kReadable | kWritable;
    return ready;
}

// Listeners are level-triggered (accept_from takes a batch at a time); one
// watched by several loops wakes only one of them per connection.
std::uint32_t listener_events(bool shared) {
    return EPOLLIN | (shared ? static_cast<std::uint32_t>(EPOLLEXCLUSIVE) : 0u);
}

FdEntry& entry_of(Timer& timer) {
    return *reinterpret_cast<FdEntry*>(reinterpret_cast<char*>(&timer) - offsetof(FdEntry, timer));
}

} // namespace

void TaskBatch::grow_and_push(Task* task) {
    const std::size_t capacity = capacity_ ? capacity_ * 2 : 64;
    std::unique_ptr<Task*[]> grown(new Task*[capacity]);
    std::copy(begin(), end(), grown.get());
    tasks_ = std::move(grown);
    capacity_ = capacity;
    tasks_[size_++] = task;
}

Loop::Loop(FdTable& table, std::uint16_t index)
    : table_(table), index_(index), now_(read_clock()), timers_(now_) {
    register_loop_counters(index_, &counters_);
}

Loop::~Loop() {
    assert(!running_loop_);
    unregister_loop_counters(index_, &counters_);
    // First: the ring's exit cancels every request (and lets go of the files
    // its polls hold), so nothing below queues more.
    byte_ring_ = nullptr;
    ring_.reset();
    // run() ends every task; a loop never run may still hold spawned ones.
    // Calls posted too late still run (they may hold references to free),
    // then whatever they started ends too.
    current_ = this;
    abort_all();
    drain_posts();
    abort_all();
    // Parked connections are closed, their states released.
    for (const int fd : finishing_)
        if (parked_with_state(fd)) close_connection(fd);
    while (parked_head_ >= 0) close_connection(parked_head_);
    fs_watch_.reset();
    current_ = nullptr;
    for (Listener& listener : listeners_) {
        listener.pause.cancel();
        if (!listener.shared && listener.fd >= 0) {
            table_.reset(listener.fd);
            ::close(listener.fd);
        }
    }
    if (post_fd_ >= 0) {
        table_.reset(post_fd_);
        ::close(post_fd_);
    }
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

int Loop::open(IoBackend backend) {
    if (backend == IoBackend::uring) {
        int error = 0;
        ring_ = Ring::open(table_.size(), error);
        if (!ring_)
            std::fprintf(stderr, "weft: loop %u: io_uring_setup: %s: using epoll\n",
                         static_cast<unsigned>(index_), std::strerror(-error));
        else if (ring_->moves_bytes())
            byte_ring_ = ring_.get();
    }
    if (!ring_) {
        epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
        if (epoll_fd_ < 0) return -errno;
    }
    post_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (post_fd_ < 0) return -errno;
    if (!table_.fits(post_fd_)) return -EMFILE;
    FdEntry& entry = table_[post_fd_];
    entry.kind = FdKind::internal;
    entry.loop = index_;
    if (ring_) {
        ++stats_.epoll_ctl;
        entry.registered = kReadable;
        return ring_->poll(post_fd_, kRingPollEvents[kReadable]) ? 0 : -ENOBUFS;
    }
    if (epoll_ctl_counted(EPOLL_CTL_ADD, post_fd_, EPOLLIN) != 0) return -errno;
    return 0;
}

std::uint64_t Loop::read_clock() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1'000'000;
}

int Loop::epoll_ctl_counted(int op, int fd, std::uint32_t events) {
    ++stats_.epoll_ctl;
    epoll_event event{};
    event.events = events;
    event.data.fd = fd;
    return ::epoll_ctl(epoll_fd_, op, fd, &event);
}

void Loop::unregister(int fd, const FdEntry& entry, bool counted) {
    if (ring_) {
        if (counted && entry.registered) ++stats_.epoll_ctl;
        ring_->forget(fd, RingOp::poll, entry.registered != 0);
    } else if (counted && entry.registered) {
        epoll_ctl_counted(EPOLL_CTL_DEL, fd, 0);
    }
}

int Loop::arm_listener(Listener& listener) {
    if (ring_) {
        ++stats_.epoll_ctl;
        return ring_->accept(listener.fd) ? 0 : -ENOBUFS;
    }
    if (epoll_ctl_counted(EPOLL_CTL_ADD, listener.fd, listener_events(listener.shared)) != 0)
        return -errno;
    return 0;
}

void Loop::close_listener(Listener& listener) {
    listener.pause.cancel();
    if (ring_) {
        // Its multishot accept, if armed (not paused); a connection it
        // accepted meanwhile is closed when its completion comes. The
        // cancel goes in now: the armed accept holds the socket, which
        // would take connections until the next tick's enter.
        ++stats_.epoll_ctl;
        ring_->forget(listener.fd, RingOp::accept, true);
        ring_->submit_and_wait(0);
    } else {
        epoll_ctl_counted(EPOLL_CTL_DEL, listener.fd, 0);
    }
    if (!listener.shared) {
        table_.reset(listener.fd);
        ::close(listener.fd);
    }
    listener.fd = -1;
}

Task* Loop::current_task() {
    Coroutine* coroutine = Coroutine::current();
    return coroutine ? static_cast<Task*>(coroutine->user()) : nullptr;
}

// --- setup ------------------------------------------------------------------

std::uint16_t Loop::add_handler(Handler handler, bool takes_ring_input) {
    assert(!running_loop_ && handlers_.size() < UINT16_MAX);
    handlers_.push_back(std::move(handler));
    takes_ring_input_.push_back(takes_ring_input);
    return static_cast<std::uint16_t>(handlers_.size() - 1);
}

int Loop::add_listener(int fd, std::uint16_t handler, bool shared) {
    assert(handler < handlers_.size());
    if (!table_.fits(fd)) return -EMFILE;
    // A slot a removed listener left is taken again: the pause timer of
    // each points into its slot, so slots never move.
    Listener* free_slot = nullptr;
    for (Listener& l : listeners_)
        if (l.fd < 0) free_slot = &l;
    Listener& listener = free_slot ? *free_slot : listeners_.emplace_back();
    listener = Listener{fd, handler, shared, Timer{}, this, {}, false};
    socklen_t length = sizeof listener.address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&listener.address), &length) != 0)
        listener.address.sin6_family = AF_UNSPEC;
    if (listener.address.sin6_family == AF_INET6)
        listener.wildcard = IN6_IS_ADDR_UNSPECIFIED(&listener.address.sin6_addr);
    else if (listener.address.sin6_family == AF_INET)
        listener.wildcard =
            reinterpret_cast<const sockaddr_in&>(listener.address).sin_addr.s_addr == INADDR_ANY;
    listener.pause.fire = [](Timer& timer) {
        auto& l = *reinterpret_cast<Listener*>(reinterpret_cast<char*>(&timer) -
                                               offsetof(Listener, pause));
        if (!l.loop->stopping_) l.loop->arm_listener(l);
    };
    FdEntry& entry = table_[fd];
    entry.kind = FdKind::listener;
    entry.handler = handler;
    entry.loop = index_;
    return arm_listener(listener);
}

void Loop::remove_listener(int fd) {
    for (Listener& listener : listeners_)
        if (listener.fd == fd) close_listener(listener);
}

// --- tasks ------------------------------------------------------------------

Task* Loop::new_task(CoroutinePtr coroutine, int fd) {
    Task* task = free_tasks_;
    if (task) {
        free_tasks_ = task->next;
        *task = Task{};
    } else {
        task = &task_storage_.emplace_back();
    }
    task->wait_timer.task = task;
    task->coroutine = std::move(coroutine);
    task->coroutine->set_user(task);
    task->fd = fd;
    task->next = live_;
    if (live_) live_->prev = task;
    live_ = task;
    ++live_tasks_;
    ++stats_.tasks_started;
    return task;
}

void Loop::free_task(Task* task) {
    if (task->warm) unlink_warm(task); // destroyed in a warm wait
    task->wait_timer.cancel();
    if (task->prev) task->prev->next = task->next;
    if (task->next) task->next->prev = task->prev;
    if (live_ == task) live_ = task->next;
    --live_tasks_;
    if (task->queued) {
        std::replace(ready_.begin(), ready_.end(), task, static_cast<Task*>(nullptr));
        std::replace(running_.begin(), running_.end(), task, static_cast<Task*>(nullptr));
    }
    *task = Task{};
    task->next = free_tasks_;
    free_tasks_ = task;
}

bool Loop::begin_warm() {
    Task* task = current_task();
    if (!task || byte_ring_ || stopping_ || warm_count_ >= warm_limit_) return false;
    assert(!task->warm);
    task->warm = true;
    task->warm_since = now_;
    task->warm_prev = warm_newest_;
    task->warm_next = nullptr;
    if (warm_newest_) {
        warm_newest_->warm_next = task;
    } else {
        warm_oldest_ = task;
    }
    warm_newest_ = task;
    ++warm_count_;
    return true;
}

void Loop::end_warm() {
    Task* task = current_task();
    if (task && task->warm) unlink_warm(task);
}

void Loop::unlink_warm(Task* task) {
    if (task->warm_prev) {
        task->warm_prev->warm_next = task->warm_next;
    } else {
        warm_oldest_ = task->warm_next;
    }
    if (task->warm_next) {
        task->warm_next->warm_prev = task->warm_prev;
    } else {
        warm_newest_ = task->warm_prev;
    }
    task->warm_prev = task->warm_next = nullptr;
    task->warm = false;
    --warm_count_;
}

void Loop::cool_warm() {
    while (Task* task = warm_oldest_) {
        if (!stopping_ && now_ - task->warm_since < warm_ms_) return;
        unlink_warm(task);
        // Waiting in its read: it parks (or, the loop stopping, closes).
        if (task->waiting) wake(*task->coroutine, kCooled);
    }
}

void Loop::queue(Task* task, std::int64_t value) {
    assert(!task->queued);
    task->queued = true;
    task->wake_value = value;
    ready_.push(task);
}

void Loop::wake(Coroutine& coroutine, std::int64_t value) {
    Task* task = static_cast<Task*>(coroutine.user());
    if (!task || !task->waiting) return;
    task->waiting = false;
    if (task->wait_fd >= 0) {
        table_[task->wait_fd].waiting = 0;
        task->wait_fd = -1;
    }
    queue(task, value);
}

void Loop::cancel(Coroutine& coroutine) {
    Task* task = static_cast<Task*>(coroutine.user());
    if (!task) return;
    if (task->waiting) {
        wake(coroutine, -ECANCELED);
    } else {
        task->pending = -ECANCELED;
    }
}

int Loop::watch_fd(int fd, FdWatcher& watcher, std::uint8_t interest) {
    if (!table_.fits(fd)) return -EBADF;
    FdEntry& entry = table_[fd];
    if (entry.kind == FdKind::free) {
        entry = FdEntry{};
        entry.kind = FdKind::watched;
        entry.loop = index_;
    } else if (entry.kind != FdKind::connection && entry.kind != FdKind::awaited &&
               entry.kind != FdKind::watched && entry.kind != FdKind::detached) {
        return -EBUSY;
    }
    if (entry.data && entry.data != &watcher) return -EBUSY;
    const bool watching = entry.data != nullptr;
    entry.data = &watcher;
    const int result = watch(fd, entry, interest);
    // A watcher epoll refused is not left behind: its owner may free it at
    // once (a detached session does), and the entry would call it.
    if (result != 0 && !watching) entry.data = nullptr;
    return result;
}

void Loop::unwatch_fd(int fd, FdWatcher& watcher) {
    if (!table_.fits(fd)) return;
    FdEntry& entry = table_[fd];
    if (entry.data != &watcher) return; // closed with close_fd, maybe reused
    entry.data = nullptr;
    if (entry.kind == FdKind::watched) {
        unregister(fd, entry, true);
        table_.reset(fd);
    }
}

FsWatch* Loop::open_fs_watch() {
    if (!fs_watch_failed_) {
        fs_watch_ = FsWatch::open(*this);
        fs_watch_failed_ = !fs_watch_;
    }
    return fs_watch_.get();
}

int Loop::close_fd(int fd) {
    if (table_.fits(fd)) {
        FdEntry& entry = table_[fd];
        assert(entry.kind != FdKind::connection && "a connection's fd is the loop's to close");
        if ((entry.kind == FdKind::awaited || entry.kind == FdKind::watched ||
             entry.kind == FdKind::detached) &&
            entry.loop == index_) {
            if (entry.kind == FdKind::detached) counters_.closed.add(1);
            unregister(fd, entry, true);
            if (entry.task && entry.task->wait_fd == fd) {
                // Another task waiting on it would wait for a file that is
                // gone, and no readiness could end that wait: it ends now.
                if (entry.task->waiting) {
                    wake(*entry.task->coroutine, -EBADF);
                } else {
                    entry.task->wait_fd = -1;
                }
            }
            table_.reset(fd);
        }
    }
    return ::close(fd) == 0 ? 0 : -errno;
}

int Loop::adopt(int fd, std::uint16_t handler) {
    if (table_.fits(fd)) table_.ends(fd).known = false;
    return adopt_accepted(fd, handler);
}

int Loop::adopt_accepted(int fd, std::uint16_t handler) {
    assert(handler < handlers_.size());
    if (!table_.fits(fd)) {
        ::close(fd);
        return -EMFILE;
    }
    FdEntry& entry = table_[fd];
    if (entry.kind != FdKind::free) {
        // The fd was closed behind the loop's back and its number reused:
        // let go of what the old entry held (a poll the ring armed still
        // holds the old file: cancelled, its completions stale).
        entry.timer.cancel();
        if (ring_ && entry.loop == index_) unregister(fd, entry, false);
        if (entry.task && entry.task->wait_fd == fd) entry.task->wait_fd = -1;
    }
    entry = FdEntry{};
    counters_.handled.add(1);
    entry.kind = FdKind::connection;
    entry.loop = index_;
    entry.handler = handler;
    entry.timer.fire = [](Timer& timer) {
        FdEntry& e = entry_of(timer);
        Loop& loop = *Loop::current();
        if (!e.task) {
            // Parked: closed, unless its handler left something to finish.
            const int fd = loop.table_.fd_of(e);
            if (e.data) {
                loop.finishing_.push_back(fd);
            } else {
                loop.close_connection(fd);
            }
        } else if (!e.task->timer_on) {
            // A deadline that ended, left armed (set_timeout): nothing.
        } else if (e.task->waiting) {
            loop.wake(*e.task->coroutine, -ETIMEDOUT);
        } else if (!e.task->pending) {
            e.task->pending = -ETIMEDOUT; // ends its next wait
        }
    };
    return start_connection(fd);
}

int Loop::start_connection(int fd) {
    FdEntry& entry = table_[fd];
    const std::uint16_t handler = entry.handler;
    CoroutinePtr coroutine =
        Coroutine::create([this, handler, fd] { return handlers_[handler](fd); });
    if (!coroutine) {
        const int error = errno;
        std::fprintf(stderr, "weft: no coroutine stack for a connection: %s\n",
                     std::strerror(error));
        close_connection(fd);
        return -error;
    }
    Task* task = new_task(std::move(coroutine), fd);
    entry.task = task;
    entry.waiting = 0;
    run_task(task);
    return 0;
}

void Loop::unpark(int fd) {
    FdEntry& entry = table_[fd];
    unlink_parked(fd);
    entry.ready &= ~kReadable;
    // The idle timeout ends with the idling: it stays armed, off for the
    // new task (Task::timer_on), which pushes it back when it parks again.
    start_connection(fd);
}

bool Loop::parked_with_state(int fd) {
    const FdEntry& entry = table_[fd];
    return entry.kind == FdKind::connection && entry.loop == index_ && !entry.task && entry.data;
}

void Loop::start_finishing() {
    // At the top of a round, not inside a timer's callback or stop(). One
    // closed meanwhile is skipped; another connection parked with a state
    // under the same number since is harmless: its handler finds nothing to
    // finish yet and parks again.
    while (!finishing_.empty()) {
        const int fd = finishing_.back();
        finishing_.pop_back();
        if (parked_with_state(fd)) unpark(fd);
    }
}

void Loop::run_task(Task* task) {
    task->queued = false;
    ++stats_.resumes;
    const std::int64_t value = task->coroutine->resume(task->wake_value);
    after_resume(task, value);
}

void Loop::after_resume(Task* task, std::int64_t value) {
    if (task->coroutine->finished()) {
        end_task(task, value);
        return;
    }
    const std::uint32_t op = yield_op(value);
    if (op >= kOpCount) return abort_unknown_op(task, op);
    if (task->pending && op != static_cast<std::uint32_t>(Op::yield) &&
        op != static_cast<std::uint32_t>(Op::abort) &&
        op != static_cast<std::uint32_t>(Op::detach)) {
        // A cancel or timeout came while it ran: this wait ends at once.
        const std::int64_t pending = std::exchange(task->pending, 0);
        task->waiting = true;
        task->wait_fd = -1;
        wake(*task->coroutine, pending);
        return;
    }
    switch (static_cast<Op>(op)) {
    case Op::yield:
        queue(task, 0);
        return;
    case Op::suspend:
        task->waiting = true;
        task->wait_fd = -1;
        return;
    case Op::abort:
    case Op::detach:
        end_task(task, value);
        return;
    default:
        break;
    }
    const std::uint8_t interest = kOpInterest[op];
    if (kOpForeign[op]) {
        await_foreign(task, yield_fd(value), interest);
    } else if (task->fd >= 0) {
        wait_on(task, task->fd, interest);
    } else {
        // A task without a connection has no own fd to want.
        task->waiting = true;
        wake(*task->coroutine, -EBADF);
    }
}

void Loop::abort_unknown_op(Task* task, std::uint32_t op) {
    std::fprintf(stderr, "weft: coroutine %llu yielded unknown op %u: aborted\n",
                 static_cast<unsigned long long>(task->coroutine->id()), op);
    end_task(task, yield_value(Op::abort));
}

void Loop::end_task(Task* task, std::int64_t result) {
    const int fd = task->fd;
    const bool finished = task->coroutine->finished();
    const bool timer_on = task->timer_on;
    // Destroying a suspended coroutine unwinds it (coroutine.hpp); its
    // defers release what it awaited.
    task->coroutine.reset();
    if (task->wait_fd >= 0) table_[task->wait_fd].waiting = 0;
    free_task(task);
    if (fd < 0) return;
    FdEntry& entry = table_[fd];
    entry.task = nullptr;
    entry.waiting = 0;
    if (!timer_on) entry.timer.cancel(); // a deadline that ended with the task
    const bool parks = finished && yield_op(result) == static_cast<std::uint32_t>(Op::want_read) &&
                       !stopping_ && !(entry.ready & kHungUp);
    if (!parks) {
        if (yield_op(result) == static_cast<std::uint32_t>(Op::detach)) {
            detach_connection(fd);
        } else {
            close_connection(fd);
        }
        return;
    }
    // Parked: no coroutine until bytes arrive, or now if they already have;
    // bytes that came before the peer's FIN are still served.
    if (entry.ready & kReadable) {
        unpark(fd);
        return;
    }
    if (entry.ready & kPeerClosed) {
        close_connection(fd);
        return;
    }
    entry.waiting = kReadable;
    // On the ring, the next bytes come into a buffer with the receive's
    // completion, which starts the coroutine (on_receive); so do the end
    // of stream and a reset, as its result. No poll for readable is armed:
    // it would complete beside the receive for every request. A head begun
    // (a ParkedState) waits for readiness: its coroutine reads the rest.
    const bool received =
        byte_ring_ && !entry.data && takes_ring_input_[entry.handler] && byte_ring_->receive(fd);
    if (!received && watch(fd, entry, kReadable) != 0) {
        close_connection(fd);
        return;
    }
    park(fd);
}

void Loop::park(int fd) {
    FdEntry& entry = table_[fd];
    entry.parked_prev = 0;
    entry.parked_next = parked_head_ + 1;
    if (parked_head_ >= 0) table_[parked_head_].parked_prev = fd + 1;
    parked_head_ = fd;
}

void Loop::unlink_parked(int fd) {
    FdEntry& entry = table_[fd];
    if (entry.parked_prev == 0 && parked_head_ != fd) return; // not parked
    if (entry.parked_prev) {
        table_[entry.parked_prev - 1].parked_next = entry.parked_next;
    } else {
        parked_head_ = entry.parked_next - 1;
    }
    if (entry.parked_next) table_[entry.parked_next - 1].parked_prev = entry.parked_prev;
    entry.parked_prev = entry.parked_next = 0;
}

// --- waiting on fds -----------------------------------------------------------

int Loop::register_interest(int fd, FdEntry& entry, std::uint8_t interest) {
    const std::uint8_t want = entry.registered | interest;
    if (kEpollEvents[want] == kEpollEvents[entry.registered]) {
        entry.registered = want; // the same events (readable asks for the peer's end too)
        return 0;
    }
    if (ring_) {
        ++stats_.epoll_ctl;
        const bool queued = entry.registered ? ring_->update_poll(fd, kRingPollEvents[want])
                                             : ring_->poll(fd, kRingPollEvents[want]);
        if (!queued) return -ENOBUFS;
        entry.registered = want;
        return 0;
    }
    if (epoll_ctl_counted(entry.registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd,
                          kEpollEvents[want]) != 0)
        return -errno;
    entry.registered = want;
    return 0;
}

std::int64_t Loop::take_ready(FdEntry& entry, std::uint8_t interest) {
    if (entry.ready & kHungUp) return kHangup; // terminal, for every waiter
    const std::uint8_t ready = entry.ready & interest;
    entry.ready &= ~(ready & (kReadable | kWritable)); // taken; the peer's end stays
    return ready;
}

void Loop::wait_on(Task* task, int fd, std::uint8_t interest) {
    FdEntry& entry = table_[fd];
    task->waiting = true;
    task->wait_fd = fd;
    entry.waiting = interest;
    if (const std::int64_t ready = take_ready(entry, interest)) {
        wake(*task->coroutine, ready);
        return;
    }
    if (const int error = watch(fd, entry, interest)) wake(*task->coroutine, error);
}

void Loop::await_foreign(Task* task, int fd, std::uint8_t interest) {
    task->waiting = true;
    if (!table_.fits(fd)) {
        wake(*task->coroutine, -EBADF);
        return;
    }
    FdEntry& entry = table_[fd];
    if (entry.kind == FdKind::free) {
        entry = FdEntry{};
        entry.kind = FdKind::awaited;
        entry.loop = index_;
        entry.task = task;
        // Released when the coroutine ends, however it ends.
        task->coroutine->defer([this, fd] { forget_awaited(this, fd); });
    } else if (entry.task != task) {
        wake(*task->coroutine, -EBUSY);
        return;
    }
    wait_on(task, fd, interest);
}

void Loop::forget_awaited(Loop* loop, int fd) {
    FdEntry& entry = loop->table_[fd];
    // The fd may have been closed and reused since: only undo our own entry.
    if (entry.kind != FdKind::awaited || entry.task != current_task()) return;
    loop->unregister(fd, entry, true);
    loop->table_.reset(fd);
}

void Loop::set_timeout(int fd, std::uint32_t ms) {
    assert(table_.fits(fd) && table_[fd].kind == FdKind::connection);
    FdEntry& entry = table_[fd];
    if (Task* task = entry.task) {
        task->timer_on = true;
        // A timeout that fired while the task ran belongs to the old deadline.
        if (task->pending == -ETIMEDOUT) task->pending = 0;
    }
    timers_.arm(entry.timer, now_ + ms); // a later deadline: pushed back, not moved
}

void Loop::clear_timeout(int fd) {
    assert(table_.fits(fd));
    FdEntry& entry = table_[fd];
    if (Task* task = entry.task) {
        // Left armed, off: the next set_timeout mostly only pushes it back.
        task->timer_on = false;
        if (task->pending == -ETIMEDOUT) task->pending = 0;
        return;
    }
    entry.timer.cancel();
}

void Loop::close_connection(int fd) {
    FdEntry& entry = table_[fd];
    assert(!entry.task);
    unlink_parked(fd);
    entry.timer.cancel();
    if (auto* state = static_cast<ParkedState*>(entry.data)) {
        counters_.parked_heads.sub(1);
        state->release(state);
    }
    // A send still in flight (a slow client) is let finish, as the kernel
    // finishes a closed socket's bytes: its slot closes the fd then.
    SendSlot* orphan = byte_ring_ ? byte_ring_->orphan(fd) : nullptr;
    if (ring_) unregister(fd, entry, false); // its poll holds the file: no FIN until it goes
    table_.reset(fd);
    counters_.closed.add(1);
    if (orphan) {
        orphan->deadline.fire = [](Timer& timer) {
            auto& slot = *reinterpret_cast<SendSlot*>(reinterpret_cast<char*>(&timer) -
                                                      offsetof(SendSlot, deadline));
            if (Ring* ring = Loop::current()->byte_ring_) ring->cancel_send(slot);
        };
        timers_.arm(orphan->deadline, now_ + Ring::kOrphanMs);
        return;
    }
    ::close(fd); // also leaves the epoll set: nothing else holds the file
}

void Loop::detach_connection(int fd) {
    FdEntry& entry = table_[fd];
    // Its data is the watcher (a task's fd has no ParkedState).
    auto* watcher = static_cast<FdWatcher*>(entry.data);
    if (!watcher) {
        close_connection(fd);
        return;
    }
    entry.timer.cancel();
    entry.kind = FdKind::detached;
    // Readiness the task left unused may have been its last edge; bytes it
    // left unread or room it did not fill raise none: the watcher tries both.
    entry.ready &= kPeerClosed | kHungUp;
    watcher->on_ready(*watcher, kReadable | kWritable | entry.ready);
}

// --- the loop -----------------------------------------------------------------

void Loop::dispatch(const epoll_event& event) {
    const int fd = event.data.fd;
    FdEntry& entry = table_[fd];
    // A stale event for an fd closed this tick whose number another loop
    // took already: not ours. (Shared listeners are every loop's.)
    if (entry.loop != index_ && entry.kind != FdKind::listener) return;
    switch (entry.kind) {
    case FdKind::connection:
    case FdKind::awaited:
    case FdKind::watched:
    case FdKind::detached:
        on_ready(fd, entry, event.events);
        return;
    case FdKind::listener:
        for (Listener& listener : listeners_)
            if (listener.fd == fd) accept_from(listener);
        return;
    case FdKind::internal:
        if (fd == post_fd_) drain_posts();
        return;
    case FdKind::free:
        return; // closed while its event was queued
    }
}

// Inlined into both callers, epoll's dispatch and the ring's on_poll: a
// call made it 10 instructions a request dearer on epoll (callgrind).
[[gnu::always_inline]] inline void Loop::on_ready(int fd, FdEntry& entry, std::uint32_t events) {
    const std::uint8_t ready = readiness_of(events);
    entry.ready |= ready;
    if (!entry.task && entry.kind == FdKind::connection) {
        // A parked connection (its data is a ParkedState, not a watcher):
        // bytes start a coroutine again (on the ring, the receive's
        // completion does, with them); a hang-up closes it.
        if (entry.ready & kHungUp) {
            close_connection(fd);
        } else if ((entry.ready & kReadable) && !receiving(fd)) {
            unpark(fd);
        }
        return;
    }
    if (entry.data) {
        // The watcher may unwatch (and free the entry) from here.
        auto* watcher = static_cast<FdWatcher*>(entry.data);
        watcher->on_ready(*watcher, ready | (entry.ready & (kPeerClosed | kHungUp)));
        if (entry.kind == FdKind::watched || entry.kind == FdKind::detached ||
            entry.kind == FdKind::free)
            return;
    }
    if (!entry.task) return;
    if (!entry.waiting || !(entry.ready & (entry.waiting | kHungUp))) return;
    const std::int64_t value = take_ready(entry, entry.waiting);
    wake(*entry.task->coroutine, value);
}

void Loop::wait_for_events(int timeout) {
    ++stats_.epoll_wait;
    if (ring_) {
        wait_on_ring(timeout);
        return;
    }
    epoll_event events[kMaxEvents];
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout);
    now_ = read_clock();
    for (int i = 0; i < n; ++i) dispatch(events[i]);
}

// --- the ring --------------------------------------------------------------------

void Loop::wait_on_ring(int timeout) {
    // One io_uring_enter: what this tick queued goes in, completions come out.
    ring_->submit_and_wait(timeout);
    now_ = read_clock();
    RingCompletion completions[kMaxEvents];
    const unsigned n = ring_->take(completions, kMaxEvents);
    for (unsigned i = 0; i < n; ++i) {
        const RingTag tag = ring_untag(completions[i].user_data);
        if (tag.op == RingOp::poll) {
            on_poll(tag, completions[i]);
        } else if (tag.op == RingOp::receive) {
            on_receive(tag, completions[i]);
        } else if (tag.op == RingOp::send) {
            on_send(tag, completions[i]);
        } else if (tag.op == RingOp::accept) {
            on_accept(tag, completions[i]);
        } else if (tag.op == RingOp::update && completions[i].res == -EALREADY &&
                   ring_->current(tag) && table_[tag.fd].registered) {
            // The poll was completing when the update came: again, now
            // that it has. (-ENOENT: it ended; its last completion re-arms.)
            ring_->update_poll(tag.fd, kRingPollEvents[table_[tag.fd].registered]);
        }
    }
}

void Loop::on_poll(const RingTag& tag, const RingCompletion& completion) {
    if (!ring_->current(tag)) return; // an fd forgotten since, maybe reused
    const int fd = tag.fd;
    FdEntry& entry = table_[fd];
    const std::int32_t res = completion.res;
    // A multishot poll that ended (the CQ overflowed, or it was cancelled
    // by the kernel) is armed again for what the fd still wants; one that
    // failed (an fd poll cannot watch) is not: its waiters see a hang-up,
    // which stays, and their syscall says what is wrong.
    if (!completion.more() && entry.registered && (res >= 0 || res == -ECANCELED)) {
        ring_->poll(fd, kRingPollEvents[entry.registered]);
        if (byte_ring_) byte_ring_->note_unordered_input(); // fs_watch.cpp's drain()
    }
    if (res == -ECANCELED) return;
    const std::uint32_t events =
        res < 0 ? static_cast<std::uint32_t>(EPOLLERR) : static_cast<std::uint32_t>(res);
    switch (entry.kind) {
    case FdKind::connection:
    case FdKind::awaited:
    case FdKind::watched:
    case FdKind::detached:
        on_ready(fd, entry, events);
        return;
    case FdKind::internal:
        if (fd == post_fd_) drain_posts();
        return;
    case FdKind::listener:
    case FdKind::free:
        return;
    }
}

bool Loop::orphan_sends() const {
    return byte_ring_ && byte_ring_->orphans() != 0;
}

bool Loop::receiving(int fd) const {
    return byte_ring_ && byte_ring_->receiving(fd);
}

void Loop::on_receive(const RingTag& tag, const RingCompletion& completion) {
    if (!byte_ring_->on_receive(tag, completion)) return; // stale: its buffer went back
    const int fd = tag.fd;
    FdEntry& entry = table_[fd];
    // Armed only on a parked connection, and nothing else starts its
    // coroutine meanwhile: this does, and its first read takes the bytes.
    if (entry.kind != FdKind::connection || entry.task) return;
    entry.ready |= kReadable;
    unpark(fd);
}

void Loop::on_send(const RingTag& tag, const RingCompletion& completion) {
    const int fd = byte_ring_->on_send(tag, completion);
    if (fd < 0) return;
    // Its writer may go on: a send that waited for this one, a settle; on
    // a backend's fd, through its watcher.
    FdEntry& entry = table_[fd];
    if (entry.loop == index_ &&
        ((entry.kind == FdKind::connection && entry.task) || entry.kind == FdKind::watched))
        on_ready(fd, entry, EPOLLOUT);
}

void Loop::on_accept(const RingTag& tag, const RingCompletion& completion) {
    Listener* listener = nullptr;
    if (ring_->current(tag) && !stopping_)
        for (Listener& l : listeners_)
            if (l.fd == tag.fd) listener = &l;
    const int fd = completion.res;
    if (!listener) {
        // Accepted before the cancel of a listener since removed: not served.
        if (fd >= 0) ::close(fd);
        return;
    }
    if (!completion.more()) {
        switch (fd >= 0 ? 0 : -fd) {
        case 0: // ended with a connection: the CQ overflowed
        case EINTR:
        case EAGAIN:
        case ECONNABORTED:
        case EPROTO:
            arm_listener(*listener);
            break;
        case EMFILE:
        case ENFILE:
        case ENOBUFS:
        case ENOMEM:
            pause_accepting(*listener);
            break;
        default:
            // Tried again after a pause: not a spin on a failing accept.
            std::fprintf(stderr, "weft: accept: %s\n", std::strerror(-fd));
            timers_.arm(listener->pause, now_ + kAcceptPauseMs);
            break;
        }
    }
    if (fd < 0) return;
    ++stats_.accepted;
    counters_.accepted.add(1);
    // No address from a multishot accept: io::socket_ends asks the socket
    // once, if anything wants to know.
    if (table_.fits(fd)) table_.ends(fd).known = false;
    adopt_accepted(fd, listener->handler);
}

void Loop::accept_from(Listener& listener) {
    for (int i = 0; i < kAcceptBatch && !stopping_; ++i) {
        sockaddr_in6 peer{}; // whole: an IPv4 peer fills 16 of its 28 bytes
        socklen_t length = sizeof peer;
        const int fd = accept4(listener.fd, reinterpret_cast<sockaddr*>(&peer), &length,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            switch (errno) {
            case EAGAIN:
                return;
            case EINTR:
            case ECONNABORTED:
            case EPROTO:
                continue;
            case EMFILE:
            case ENFILE:
            case ENOBUFS:
            case ENOMEM:
                pause_accepting(listener);
                return;
            default:
                std::fprintf(stderr, "weft: accept: %s\n", std::strerror(errno));
                return;
            }
        }
        ++stats_.accepted;
        counters_.accepted.add(1);
        if (table_.fits(fd)) {
            SocketEnds& ends = table_.ends(fd);
            ends.peer = peer;
            ends.local = listener.address;
            ends.tls = false;
            ends.proxied = false;
            length = sizeof ends.local;
            if (listener.wildcard &&
                ::getsockname(fd, reinterpret_cast<sockaddr*>(&ends.local), &length) != 0)
                ends.local.sin6_family = AF_UNSPEC;
            ends.known = true;
        }
        // TCP_NODELAY comes from the listening socket: Linux copies it.
        adopt_accepted(fd, listener.handler);
    }
}

void Loop::pause_accepting(Listener& listener) {
    // Out of fds or memory: stop watching the listener for a while, rather
    // than spin on an accept that keeps failing. Connections wait in the
    // backlog meanwhile.
    ++stats_.accept_pauses;
    if (!ring_) epoll_ctl_counted(EPOLL_CTL_DEL, listener.fd, 0); // the ring's accept has ended
    timers_.arm(listener.pause, now_ + kAcceptPauseMs);
}

void Loop::close_parked() {
    // One parked in the middle of something (a ParkedState) is given a
    // coroutine to finish it, as a running request is; the others close.
    while (parked_head_ >= 0) {
        const int fd = parked_head_;
        if (table_[fd].data) {
            unlink_parked(fd);
            finishing_.push_back(fd);
        } else {
            close_connection(fd);
        }
    }
}

void Loop::post(std::function<void()> fn) {
    bool first = false;
    {
        std::lock_guard lock(post_mutex_);
        first = posted_.empty();
        posted_.push_back(std::move(fn));
    }
    if (first) {
        // One wake-up per batch: later posts see a non-empty queue.
        const std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(post_fd_, &one, sizeof one);
    }
}

void Loop::drain_posts() {
    std::uint64_t count = 0;
    [[maybe_unused]] ssize_t n = ::read(post_fd_, &count, sizeof count);
    std::vector<std::function<void()>> batch;
    {
        std::lock_guard lock(post_mutex_);
        batch.swap(posted_);
    }
    for (auto& fn : batch) fn();
}

void Loop::defer(std::function<void()> fn) {
    deferred_.push_back(std::move(fn));
}

void Loop::run_deferred() {
    while (!deferred_.empty()) {
        std::vector<std::function<void()>> batch;
        batch.swap(deferred_);
        for (auto& fn : batch) fn();
    }
}

void Loop::run_ready() {
    // Tasks woken by tasks run in further batches before the loop polls for
    // I/O again, up to a budget: an await hand-off between coroutines costs
    // no epoll_wait, and I/O is never starved.
    for (int batch = 0; batch < kReadyBatches && !ready_.empty() && !past_deadline(); ++batch) {
        running_.swap(ready_);
        for (std::size_t i = 0; i < running_.size(); ++i) {
            if (Task* task = running_[i]) run_task(task); // null: ended meanwhile
        }
        running_.clear();
    }
}

void Loop::stop(std::chrono::milliseconds grace) {
    const std::uint64_t deadline = now_ + static_cast<std::uint64_t>(grace.count());
    if (stopping_) {
        stop_deadline_ = std::min(stop_deadline_, deadline);
        return;
    }
    stopping_ = true;
    closing_connections_ = true;
    stop_deadline_ = deadline;
    run_stop_hooks();
    for (Listener& listener : listeners_)
        if (listener.fd >= 0) close_listener(listener); // else removed
    close_parked();
}

std::uint64_t Loop::add_stop_hook(std::function<void()> hook) {
    stop_hooks_.emplace_back(++last_stop_hook_, std::move(hook));
    return last_stop_hook_;
}

void Loop::remove_stop_hook(std::uint64_t id) {
    std::erase_if(stop_hooks_, [id](const auto& hook) { return hook.first == id; });
}

void Loop::run_stop_hooks() {
    const auto hooks = std::exchange(stop_hooks_, {});
    for (const auto& hook : hooks) hook.second();
}

void Loop::abort_all() {
    ready_.clear();
    running_.clear();
    while (live_) {
        live_->queued = false;
        end_task(live_, yield_value(Op::abort));
    }
}

void Loop::run() {
    assert((epoll_fd_ >= 0 || ring_) && "open() the loop first");
    current_ = this;
    running_loop_ = true;
    for (;;) {
        start_finishing();
        run_ready();
        run_deferred();
        if (warm_oldest_) cool_warm(); // before the wait: a stop cools them all
        if (stopping_ && ((live_tasks_ == 0 && !orphan_sends()) || past_deadline())) break;

        std::int64_t timeout = ready_.empty() ? timers_.next_timeout(now_) : 0;
        if (warm_oldest_ && timeout != 0) {
            // Woken to cool the oldest warm wait, at the latest.
            const std::uint64_t waited = now_ - warm_oldest_->warm_since;
            const auto left = static_cast<std::int64_t>(waited < warm_ms_ ? warm_ms_ - waited : 0);
            timeout = timeout < 0 ? left : std::min(timeout, left);
        }
        if (stopping_) {
            const std::int64_t left = static_cast<std::int64_t>(stop_deadline_ - now_);
            timeout = timeout < 0 ? left : std::min(timeout, left);
        }
        if (timeout != 0) {
            // About to sleep: a good time to give back stacks a burst left.
            StackPool::this_thread().trim();
            if (timeout < 0 && extension_) {
                extension_->on_idle(); // may stop the loop or wake a task
                if (stopping_ || !ready_.empty()) timeout = 0;
            }
        }
        wait_for_events(static_cast<int>(timeout));
        timers_.advance(now_);
    }
    abort_all();
    // The cancels of polls on fds closed last go in now: their peers see
    // the FIN at once, not when the ring goes.
    if (ring_) ring_->submit_and_wait(0);
    running_loop_ = false;
    current_ = nullptr;
}

void Loop::linger() {
    assert(stopping_ && live_tasks_ == 0);
    current_ = this;
    running_loop_ = true;
    while (!lingering_ended_) {
        wait_for_events(static_cast<int>(timers_.next_timeout(now_)));
        timers_.advance(now_);
        run_deferred();
        abort_all(); // stopped: a task a posted call started has no time left
    }
    if (ring_) ring_->submit_and_wait(0);
    running_loop_ = false;
    current_ = nullptr;
}

void Loop::end_lingering() {
    post([this] { lingering_ended_ = true; });
}

} // namespace weft
