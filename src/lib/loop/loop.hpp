#pragma once
// A Loop: one thread's epoll loop and the coroutines it runs.
//
// Each coroutine is a Task. A connection task serves one fd; when its handler
// returns Op::want_read the connection is parked: it keeps its fd and epoll
// registration but no coroutine or stack, and a new coroutine is started
// when bytes arrive. Op::detach leaves the fd open to the FdWatcher attached
// to it (a WebSocket served by callbacks: http/detached.hpp). Any other
// return, or Op::abort, closes the fd.
//
// After each resume the loop reads the yielded value (yield_protocol.hpp) and
// makes at most one epoll_ctl: registrations are edge-triggered and only
// grow, so waiting again for what is registered costs none. Readiness seen
// while a task was not waiting for it is remembered in the fd's entry, so an
// edge is never lost; hang-ups are remembered for good.

#include "coro/coroutine.hpp"
#include "loop/fd_table.hpp"
#include "loop/io_backend.hpp"
#include "loop/loop_stats.hpp"
#include "loop/timer_wheel.hpp"
#include "loop/yield_protocol.hpp"

#include <sys/epoll.h>

#include <cassert>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace weft {

// What a connection's handler leaves with the connection when it parks in
// the middle of something (the part of a request head received so far), so
// that a slow client holds no coroutine stack. The loop keeps it in the fd's
// entry (FdEntry::data) from the moment the handler leaves it, just before it
// returns, until the next coroutine of the connection takes it back, first
// thing: meanwhile nothing can watch the fd (watchers live on a task's
// stack), so data means nothing else. Such a connection is not closed behind
// its handler's back when its timeout fires or the loop stops: it is given a
// coroutine, as for bytes, so the handler can finish what it began (a 408,
// or the request). A hang-up closes it like any parked connection; whenever
// the loop closes it, the loop calls `release`.
class Ring;
struct RingCompletion;
struct RingTag;

struct Task;
// A timer that knows its task.
struct TaskTimer : Timer {
    Task* task = nullptr;
};

struct ParkedState {
    void (*release)(ParkedState* self);
};
class FsWatch;

struct Task {
    CoroutinePtr coroutine;
    Task* prev = nullptr; // the loop's list of live tasks
    Task* next = nullptr;
    int fd = -1;          // the connection it serves, or -1
    int wait_fd = -1;     // the fd whose entry records its wait, or -1
    bool waiting = false; // suspended in a wait that wake() ends
    bool queued = false;  // in the run queue
    // Whether its fd's timer is its own (Loop::set_timeout). Off, a timer
    // still armed is a deadline that ended (the park's, or a wait's): it is
    // left in the wheel, where a later set_timeout only pushes it back, and
    // ignored if it fires first.
    bool timer_on = false;
    bool warm = false; // on the loop's list of warm waits (Loop::begin_warm)
    Task* warm_prev = nullptr;
    Task* warm_next = nullptr;
    std::uint64_t warm_since = 0; // on the loop's clock
    // -ECANCELED or -ETIMEDOUT that came while it was not waiting (running, or
    // already woken): it ends the next wait, so a woken value is never lost.
    std::int64_t pending = 0;
    std::int64_t wake_value = 0;
    void* waiter = nullptr;            // the event layer's Waker while it waits there
    const void* direct_wait = nullptr; // the direct wait it is in (event/direct_wait.hpp)
    // The event layer's timeouts (a Waker's, a DirectWait's), one wait after
    // another. A wait that ends first leaves it armed, so the next one's
    // deadline, mostly later, only pushes it back (a store) instead of
    // placing a timer again; firing for a wait that is over, it does
    // nothing. Disarmed when the task ends. (Until it fires it counts as an
    // armed timer: a deadlock report, made only with none armed, may come
    // that much later.)
    TaskTimer wait_timer;
    void* completion = nullptr; // the event layer's event for its end, if asked
};

// Something above the loop that watches an fd (the event layer's PollProxy):
// it sees every readiness the loop sees on that fd.
struct FdWatcher {
    void (*on_ready)(FdWatcher& self, std::uint8_t ready);
};

// What the layer above keeps per loop (the event layer's state); the loop
// owns it and tells it about signals and idleness.
// The run queue's storage. A push is a store and an increment; growing
// (rare: the storage keeps its largest size) is out of line and takes the
// push along as a tail call, so wake(), which pushes, saves no registers
// for a reallocation it almost never makes (callgrind: 14 instructions a
// wake with std::vector's inlined push_back).
class TaskBatch {
public:
    void push(Task* task) {
        if (size_ == capacity_) [[unlikely]]
            return grow_and_push(task);
        tasks_[size_++] = task;
    }
    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    Task*& operator[](std::size_t i) { return tasks_[i]; }
    Task** begin() { return tasks_.get(); }
    Task** end() { return tasks_.get() + size_; }
    void clear() { size_ = 0; }
    void swap(TaskBatch& other) noexcept {
        std::swap(tasks_, other.tasks_);
        std::swap(size_, other.size_);
        std::swap(capacity_, other.capacity_);
    }

private:
    [[gnu::noinline]] void grow_and_push(Task* task);

    std::unique_ptr<Task*[]> tasks_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;
};

class LoopExtension {
public:
    virtual ~LoopExtension() = default;
    // A signal the LoopGroup received, delivered on this loop's thread.
    virtual void on_signal(int signo) { (void)signo; }
    // The loop is about to wait with nothing ready and no timer armed.
    virtual void on_idle() {}
};

class Loop {
public:
    // Serves the connection on `fd` in a coroutine; returns the final Op
    // (Op::want_read parks the connection, anything else closes it).
    using Handler = std::function<std::int64_t(int fd)>;

    struct Stats {
        std::uint64_t epoll_ctl = 0;
        std::uint64_t epoll_wait = 0;
        std::uint64_t resumes = 0;
        std::uint64_t accepted = 0;
        std::uint64_t accept_pauses = 0;
        std::uint64_t tasks_started = 0;
    };

    // The loop watches fds in `table`, as loop number `index`.
    explicit Loop(FdTable& table, std::uint16_t index = 0);
    ~Loop();
    Loop(const Loop&) = delete;
    Loop& operator=(const Loop&) = delete;

    // Creates the epoll fd, or the io_uring ring, and the eventfd; 0 or
    // -errno. A ring the kernel refuses (ENOMEM under RLIMIT_MEMLOCK, say):
    // epoll instead, with one line on stderr naming the reason.
    int open(IoBackend backend = default_io_backend());
    IoBackend backend() const { return ring_ ? IoBackend::uring : IoBackend::epoll; }
    // The ring, when connections' bytes go through it (ring.hpp: a parked
    // connection's next bytes, and sends that fit a slot); else nullptr.
    Ring* byte_ring() const { return byte_ring_; }
    // Runs until stopped and every task has ended; on its own thread.
    void run();
    // After run(), for a loop of a group: runs the calls posted to it, and
    // its timers, until end_lingering(). The other loops may still hand it
    // work (an upstream's connection kept here, for a request of theirs):
    // done now, by this loop's thread, not when the loop is destroyed.
    void linger();
    // Ends linger(), or the one to come; from any thread.
    void end_lingering();
    // Stops accepting, closes parked connections, lets running tasks finish
    // for `grace` (and, on a ring, the sends of connections closed with a
    // send in flight), then destroys the rest. Loop thread only; from elsewhere,
    // post() it. A second call can only shorten the grace.
    void stop(std::chrono::milliseconds grace);
    bool stopping() const { return stopping_; }
    // Keeps serving, but each response from now on closes its connection
    // (Connection: close): a drain before a stop, so that clients reconnect,
    // through a load balancer, elsewhere. Loop thread only; stop() does it
    // too.
    void close_connections() { closing_connections_ = true; }
    bool closing_connections() const { return closing_connections_; }
    bool past_deadline() const { return stopping_ && now_ >= stop_deadline_; }
    // While stopping, how long until the stop's deadline (0 past it); else
    // milliseconds::max().
    std::chrono::milliseconds stop_grace_left() const {
        if (!stopping_) return std::chrono::milliseconds::max();
        return std::chrono::milliseconds(now_ < stop_deadline_ ? stop_deadline_ - now_ : 0);
    }
    // Calls `hook` on the loop's thread when stop() is first called, after
    // stopping() turns true and before parked connections close: what keeps
    // fds without a task (detached sessions) closes them, or spawns a task
    // that waits until they have closed, so run() does not return under
    // them. Hooks run in the order added, once; one added or removed while
    // they run is not run. Loop thread only (or before run()); the id is
    // for remove_stop_hook().
    std::uint64_t add_stop_hook(std::function<void()> hook);
    void remove_stop_hook(std::uint64_t id);

    // A handler for connections (setup, before run()), and a listening
    // socket whose connections it serves (before run(), or on the loop's
    // thread: a reload). A shared listener is watched by several loops
    // (EPOLLEXCLUSIVE) and closed by its owner; any other is the loop's.
    //
    // `takes_ring_input`: the handler reads its connection through
    // http::ClientSocket, which takes the bytes a ring receive brought: on a
    // ring that moves bytes, a connection parked idle is given a receive
    // (ring.hpp). Other handlers read the socket themselves, and get none.
    std::uint16_t add_handler(Handler handler, bool takes_ring_input = false);
    int add_listener(int fd, std::uint16_t handler, bool shared);
    // Stops watching listener `fd`, and closes it unless it is shared; the
    // connections it gave stay. Loop thread only (or before run()).
    void remove_listener(int fd);

    // From a connection's own task, just before its handler returns
    // Op::want_read having left a ParkedState: the connection is given a
    // new coroutine at the top of the next round instead of waiting for
    // bytes (a reload: the next request is served by the new handler state).
    void restart_soon(int fd) { finishing_.push_back(fd); }

    // Serves `fd` (a connected socket) with handler number `handler`; 0 or
    // -errno (the fd is closed then).
    int adopt(int fd, std::uint16_t handler);
    // Runs `body` as a task with no connection; nullptr if no stack.
    template <class Body>
    Coroutine* spawn(Body&& body);

    // Ends the wait of a task suspended or waiting on an fd: it runs on the
    // next tick and sees `value`. Nothing happens to a task not waiting.
    void wake(Coroutine& coroutine, std::int64_t value);
    // Cancels the task's wait (it sees -ECANCELED), or, if it is not waiting
    // (running, or already woken), its next wait: a value it was woken with
    // is never lost.
    void cancel(Coroutine& coroutine);

    // Watches an fd for the layer above: `watcher` sees its readiness; the
    // registration grows to `interest` (kReadable, kWritable, kPeerClosed:
    // edge-triggered, like every other).
    // A connection's own fd can be watched too: if its task then ends with
    // Op::detach, the fd stays open, the watcher's for good, and its
    // on_ready is called at once with kReadable | kWritable and the sticky
    // bits (the task may have left bytes or room that raise no new edge).
    // 0 or -errno.
    int watch_fd(int fd, FdWatcher& watcher, std::uint8_t interest);
    // Stops `watcher` watching fd; nothing if it no longer does. (A detached
    // fd stays open and registered, unheard, until close_fd.)
    void unwatch_fd(int fd, FdWatcher& watcher);
    // Closes an fd that a task awaits or a watcher watches, or a detached
    // connection (counted closed), forgetting it first: closing it behind
    // the loop's back would leave a stale entry for the next fd with that
    // number. A task waiting on it is woken with -EBADF. (A connection's own
    // fd is closed by the loop when its handler returns.) 0 or -errno.
    int close_fd(int fd);

    // This loop's watch of changes on disk, made on first use; nullptr when
    // inotify is unavailable (then a cache must ask the disk each time).
    FsWatch* fs_watch() { return fs_watch_ ? fs_watch_.get() : open_fs_watch(); }

    // The layer above's per-loop state; the loop deletes it last.
    LoopExtension* extension() const { return extension_.get(); }
    void set_extension(std::unique_ptr<LoopExtension> extension) {
        extension_ = std::move(extension);
    }
    // Hands a signal to the extension; LoopGroup posts it here.
    void deliver_signal(int signo) {
        if (extension_) extension_->on_signal(signo);
    }
    // Calls fn(task) for each live task.
    template <class F>
    void for_each_task(F&& fn) const {
        for (Task* t = live_; t; t = t->next) fn(*t);
    }

    // Runs `fn` on this loop's thread, soon; callable from any thread. Calls
    // posted before the loop wakes are run in one batch; calls posted after
    // run() returned run in linger(), or else when the loop is destroyed.
    void post(std::function<void()> fn);
    // Runs `fn` after this tick's events; loop thread only.
    void defer(std::function<void()> fn);

    // A connection's ParkedState, from its own task: left just before the
    // handler returns Op::want_read (an Op that closes releases it), and
    // taken back by the next coroutine of the connection first thing, before
    // anything could watch the fd (nullptr: nothing was left). No syscall,
    // nothing allocated: it is the fd's entry, which the loop has just read
    // to start the coroutine.
    void leave_parked(int fd, ParkedState* state) {
        assert(table_[fd].kind == FdKind::connection && table_[fd].task && !table_[fd].data);
        table_[fd].data = state;
        counters_.parked_heads.add(1); // not on the ordinary path: a head in pieces
    }
    ParkedState* take_parked(int fd) {
        FdEntry& entry = table_[fd];
        if (!entry.data) return nullptr;
        counters_.parked_heads.sub(1);
        return static_cast<ParkedState*>(std::exchange(entry.data, nullptr));
    }

    // The fd's timeout: `ms` from now its waiting task is woken with
    // -ETIMEDOUT, or a parked connection is closed (or, with a ParkedState,
    // given a coroutine). Re-setting replaces it.
    void set_timeout(int fd, std::uint32_t ms);
    void clear_timeout(int fd);

    // Warm waits. A connection that answered may wait for its next request
    // on its own coroutine, rather than end it and park: that request then
    // costs a resume, not a new coroutine. Only a few wait so, briefly: at
    // most kWarmLimit at once on a loop, each for kWarmMs at most; then the
    // loop ends the wait with kCooled, and the connection parks as before.
    // So an idle connection still holds no stack, and a busy one (a load
    // balancer's, a page's assets) keeps its coroutine between requests.
    // Not on a ring that moves bytes: there a parked connection's next bytes
    // come with a receive, which a wait for readiness would trade for a poll
    // and a recv (Loop::end_task). The limit keeps what warm waits hold
    // resident to 32 stacks a loop (about 44 KiB each, touched by a
    // connection's frame), which the stack pool then keeps warm.
    static constexpr std::size_t kWarmLimit = 32;
    static constexpr std::uint64_t kWarmMs = 5;
    static constexpr std::int64_t kCooled = -EAGAIN;
    // Whether the running task may wait warm now; it is then on the list
    // until end_warm(), or until the loop cools it (its wait ends kCooled).
    bool begin_warm();
    void end_warm();
    // Other bounds than kWarmLimit and kWarmMs (tests; a limit of 0: no
    // warm waits).
    void set_warm_bounds(std::size_t limit, std::uint64_t ms) {
        warm_limit_ = limit;
        warm_ms_ = ms;
    }

    TimerWheel& timers() { return timers_; }
    // Milliseconds on CLOCK_MONOTONIC, read once per tick.
    std::uint64_t now() const { return now_; }

    static Loop* current() { return current_; }
    // The task running on this thread, if it runs on a loop.
    static Task* current_task();
    std::uint16_t index() const { return index_; }
    FdTable& table() { return table_; }
    const Stats& stats() const { return stats_; }
    // What it served, for the status handler: written by this loop's thread
    // only, readable from any (loop_stats.hpp).
    LoopCounters& counters() { return counters_; }
    std::size_t live_tasks() const { return live_tasks_; }

private:
    struct Listener {
        int fd;
        std::uint16_t handler;
        bool shared;
        Timer pause; // re-enables accepting after EMFILE and the like
        Loop* loop;
        sockaddr_in6 address;  // what it is bound to, the local end of its connections
        bool wildcard = false; // bound to any address: ask each connection
    };

    Task* new_task(CoroutinePtr coroutine, int fd);
    void start_task(Task* task);
    void run_task(Task* task);
    void after_resume(Task* task, std::int64_t value);
    void end_task(Task* task, std::int64_t result);
    void free_task(Task* task);
    void unlink_warm(Task* task);
    // Ends the warm waits past kWarmMs (all of them once the loop stops).
    void cool_warm();
    int start_connection(int fd);
    int adopt_accepted(int fd, std::uint16_t handler);
    void unpark(int fd);
    bool parked_with_state(int fd);
    void start_finishing();
    void queue(Task* task, std::int64_t value);

    void wait_on(Task* task, int fd, std::uint8_t interest);
    [[gnu::noinline]] void await_foreign(Task* task, int fd, std::uint8_t interest);
    static void forget_awaited(Loop* loop, int fd);
    // The registration grown to `interest`: nothing when it holds it (in
    // line: every wait after the first), else register_interest().
    int watch(int fd, FdEntry& entry, std::uint8_t interest) {
        if ((entry.registered | interest) == entry.registered) return 0;
        return register_interest(fd, entry, interest);
    }
    // Out of line, so that the resume path saves no registers for the
    // epoll_ctl it mostly does not make.
    [[gnu::noinline]] int register_interest(int fd, FdEntry& entry, std::uint8_t interest);
    [[gnu::noinline, gnu::cold]] void abort_unknown_op(Task* task, std::uint32_t op);
    std::int64_t take_ready(FdEntry& entry, std::uint8_t interest);

    FsWatch* open_fs_watch();
    void dispatch(const epoll_event& event);
    void on_ready(int fd, FdEntry& entry, std::uint32_t events);
    void accept_from(Listener& listener);
    void pause_accepting(Listener& listener);
    void close_connection(int fd);
    void detach_connection(int fd);
    void run_stop_hooks();
    void park(int fd);
    void unlink_parked(int fd);
    void close_parked();
    void drain_posts();
    void run_ready();
    void run_deferred();
    void abort_all();
    std::uint64_t read_clock();
    int epoll_ctl_counted(int op, int fd, std::uint32_t events);
    // Stops watching fd (EPOLL_CTL_DEL, or the ring's cancel) before its
    // entry is reset; `counted` as an epoll_ctl in the stats.
    void unregister(int fd, const FdEntry& entry, bool counted);
    int arm_listener(Listener& listener);
    void close_listener(Listener& listener);
    // One wait of a tick (epoll_wait, or the ring's enter), its events handled.
    void wait_for_events(int timeout);
    void wait_on_ring(int timeout);
    void on_poll(const RingTag& tag, const RingCompletion& completion);
    void on_accept(const RingTag& tag, const RingCompletion& completion);
    void on_receive(const RingTag& tag, const RingCompletion& completion);
    void on_send(const RingTag& tag, const RingCompletion& completion);
    bool receiving(int fd) const;
    bool orphan_sends() const;

    FdTable& table_;
    const std::uint16_t index_;
    int epoll_fd_ = -1;
    std::unique_ptr<Ring> ring_; // instead of epoll_fd_ on the uring backend
    Ring* byte_ring_ = nullptr;  // ring_, when it moves connections' bytes
    int post_fd_ = -1;           // eventfd
    std::uint64_t now_;
    TimerWheel timers_;
    Stats stats_;
    LoopCounters counters_;

    std::vector<Handler> handlers_;
    std::vector<bool> takes_ring_input_; // per handler
    std::deque<Listener> listeners_;

    std::deque<Task> task_storage_; // tasks are pooled: never freed, reused
    Task* free_tasks_ = nullptr;    // linked through Task::next
    Task* live_ = nullptr;
    std::size_t live_tasks_ = 0;
    // Warm waits, oldest first (begin_warm).
    Task* warm_oldest_ = nullptr;
    Task* warm_newest_ = nullptr;
    std::size_t warm_count_ = 0;
    std::size_t warm_limit_ = kWarmLimit;
    std::uint64_t warm_ms_ = kWarmMs;
    TaskBatch ready_;   // woken this tick, run next
    TaskBatch running_; // the batch being run
    std::vector<std::function<void()>> deferred_;
    std::vector<std::pair<std::uint64_t, std::function<void()>>> stop_hooks_;
    std::uint64_t last_stop_hook_ = 0;

    std::mutex post_mutex_;
    std::vector<std::function<void()>> posted_; // guarded by post_mutex_

    std::unique_ptr<LoopExtension> extension_; // outlives every task: ~Loop ends them first
    std::unique_ptr<FsWatch> fs_watch_;
    bool fs_watch_failed_ = false;
    bool running_loop_ = false;
    bool stopping_ = false;
    bool closing_connections_ = false;
    bool lingering_ended_ = false;
    std::uint64_t stop_deadline_ = 0;
    int parked_head_ = -1; // this loop's parked connections, linked through their entries
    // Parked connections with a ParkedState whose timeout fired, or whose
    // loop stops: each gets a coroutine at the top of the next round.
    std::vector<int> finishing_;

    inline static thread_local Loop* current_ = nullptr;
};

template <class Body>
Coroutine* Loop::spawn(Body&& body) {
    CoroutinePtr coroutine = Coroutine::create(std::forward<Body>(body));
    if (!coroutine) return nullptr;
    Task* task = new_task(std::move(coroutine), -1);
    Coroutine* raw = task->coroutine.get();
    queue(task, 0);
    return raw;
}

} // namespace weft
