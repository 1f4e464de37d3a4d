#include "fastcgi/upstream.hpp"

#include "event/trigger_event.hpp"
#include "event/waker.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

namespace weft::fastcgi {

namespace {

// How long a server whose connect failed is skipped (nginx's fail_timeout).
constexpr std::uint64_t kFailTimeoutMs = 10'000;

// Wakes a waiter: at once on this loop, else through its loop's queue.
void wake_up(const Ref<TriggerEvent>& wake) {
    if (!wake) return;
    if (&wake->loop() == Loop::current())
        wake->fire_here();
    else
        wake->fire();
}

// Every Upstream alive: a stall closes the idle connections of the others
// that share a server too (two upstreams, or two `pass =`, on one php-fpm
// pool): theirs hold its children as much as its own do.
struct Registry {
    std::mutex mutex;
    std::vector<Upstream*> upstreams;
};

Registry& registry() {
    static Registry r;
    return r;
}

} // namespace

// --- Backend ------------------------------------------------------------------

Backend::Backend(Upstream& upstream, int fd, const Address& server, std::size_t server_index)
    : upstream_(&upstream), fd_(fd), server_(&server), server_index_(server_index) {
    clock_.backend = this;
    clock_.fire = [](Timer& timer) {
        Backend* backend = static_cast<Clock&>(timer).backend;
        backend->upstream_->on_clock(backend);
    };
}

Backend::~Backend() {
    clock_.cancel();
    detach();
    ::close(fd_);
}

void Backend::attach(Loop& loop) {
    if (loop_ == &loop) return;
    detach();
    proxy_ = new (proxy_storage_) PollProxy(loop, fd_);
    loop_ = &loop;
}

void Backend::detach() {
    if (!proxy_) return;
    proxy_->~PollProxy(); // leaves that loop's epoll
    proxy_ = nullptr;
    loop_ = nullptr;
}

// --- the wait queue -----------------------------------------------------------

// A request waiting for a connection, on its coroutine's stack. Whoever hands
// it a connection (or a slot) takes it out of the queue under the lock and
// fires its trigger after; the trigger is reference counted, so a waiter that
// timed out meanwhile cannot take it away from under the firing. It fires
// once and stays fired: the waiter's ClientWatch may be between two awaits
// of it (woken by its client) when it fires.
struct Upstream::Waiter {
    // Its trigger: one of the loop's spares, when it has one, else a new
    // one; given back as a spare when nothing else holds it any more.
    Waiter(Loop& on, UpstreamLoopCounters* here) : loop(&on), kept(here) {
        if (kept && !kept->spare_triggers.empty() && &kept->spare_triggers.back()->loop() == &on) {
            wake = std::move(kept->spare_triggers.back());
            kept->spare_triggers.pop_back();
        } else {
            wake =
                Ref<TriggerEvent>::adopt(Event::make<TriggerEvent>(on, TriggerEvent::Fires::once));
        }
    }
    ~Waiter() {
        if (kept && kept->spare_triggers.size() < UpstreamLoopCounters::kSpareTriggers &&
            wake->rearm())
            kept->spare_triggers.push_back(std::move(wake));
    }
    Waiter(const Waiter&) = delete;
    Waiter& operator=(const Waiter&) = delete;

    Loop* loop;
    UpstreamLoopCounters* kept;
    Ref<TriggerEvent> wake;
    Backend* backend = nullptr; // handed over
    bool slot = false;          // or: room to open a connection
    bool queued = true;
    Waiter* prev = nullptr;
    Waiter* next = nullptr;
};

Upstream::Upstream(UpstreamOptions options)
    : options_(std::move(options)), connect_timeout_ms_(options_.connect_timeout_ms),
      read_timeout_ms_(options_.read_timeout_ms), queue_timeout_ms_(options_.queue_timeout_ms),
      keeps_connections_(options_.keepalive > 0),
      down_until_(new std::atomic<std::uint64_t>[options_.servers.size()]),
      server_failures_(new std::atomic<std::uint64_t>[options_.servers.size()]),
      loop_counters_(new std::atomic<UpstreamLoopCounters*>[kMaxCountedLoops]) {
    for (std::size_t i = 0; i < options_.servers.size(); ++i)
        down_until_[i] = server_failures_[i] = 0;
    for (unsigned i = 0; i < kMaxCountedLoops; ++i) loop_counters_[i] = nullptr;
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.upstreams.push_back(this);
}

Upstream::~Upstream() {
    {
        Registry& r = registry();
        std::lock_guard lock(r.mutex);
        std::erase(r.upstreams, this);
    }
    // Every loop has ended: their epolls are gone, only the fds are left.
    while (Backend* b = idle_) {
        unlink_idle(b);
        b->proxy_ = nullptr;
        b->clock_.prev = b->clock_.next = nullptr; // its wheel went with its loop
        delete b;
    }
    for (unsigned i = 0; i < kMaxCountedLoops; ++i) delete loop_counters_[i].load();
}

// --- counting -----------------------------------------------------------------

void UpstreamLoopCounters::count_wait(std::uint64_t ms) {
    std::size_t i = 0;
    while (i < std::size(kWaitBoundsMs) && ms > kWaitBoundsMs[i]) ++i;
    wait_ms[i].add(1);
    wait_sum_ms.add(ms);
}

UpstreamLoopCounters* Upstream::counters_here() {
    const unsigned index = Loop::current()->index();
    if (index >= kMaxCountedLoops) return nullptr;
    std::atomic<UpstreamLoopCounters*>& slot = loop_counters_[index];
    // Only this loop's thread stores here; release: a reader that finds the
    // pointer finds the counters made.
    UpstreamLoopCounters* counters = slot.load(std::memory_order_relaxed);
    if (!counters) {
        counters = new UpstreamLoopCounters;
        slot.store(counters, std::memory_order_release);
    }
    return counters;
}

const UpstreamLoopCounters* Upstream::loop_counters(unsigned index) const {
    return index < kMaxCountedLoops ? loop_counters_[index].load(std::memory_order_acquire)
                                    : nullptr;
}

std::uint64_t Upstream::server_failures(std::size_t server) const {
    return server < options_.servers.size() ? server_failures_[server].load() : 0;
}

bool Upstream::server_down(std::size_t server, std::uint64_t now_ms) const {
    return server < options_.servers.size() &&
           down_until_[server].load(std::memory_order_relaxed) > now_ms;
}

void Upstream::for_each(const std::function<void(Upstream&)>& fn) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (Upstream* upstream : r.upstreams) fn(*upstream);
}

Upstream::Counts Upstream::counts() {
    std::lock_guard lock(mutex_);
    return {open_, idle_count_, waiting_, stalled_, options_.max_conns};
}

void Upstream::push_idle(Backend* backend) {
    backend->prev_ = nullptr;
    backend->next_ = idle_;
    if (idle_) idle_->prev_ = backend;
    idle_ = backend;
    backend->idle_ = true;
    ++idle_count_;
    // On its loop (release() and hand-overs run there): its wheel. Left
    // armed from its last idle time, the deadline is only pushed back.
    if (const std::uint32_t ms = options_.keepalive_timeout_ms) {
        Loop& loop = *backend->loop_;
        loop.timers().arm(backend->clock_, loop.now() + ms);
    } else {
        backend->clock_.cancel(); // a reload made idle ones stay open
    }
}

void Upstream::unlink_idle(Backend* backend) {
    if (backend->prev_) backend->prev_->next_ = backend->next_;
    if (backend->next_) backend->next_->prev_ = backend->prev_;
    if (idle_ == backend) idle_ = backend->next_;
    backend->prev_ = backend->next_ = nullptr;
    backend->idle_ = false;
    --idle_count_;
    // Its clock is left to its loop: whoever took it cancels it there.
}

void Upstream::unlink_waiter(Waiter& w) {
    if (w.prev)
        w.prev->next = w.next;
    else
        first_waiter_ = w.next;
    if (w.next)
        w.next->prev = w.prev;
    else
        last_waiter_ = w.prev;
    w.prev = w.next = nullptr;
    w.queued = false;
    --waiting_;
}

bool Upstream::hand_over(Backend* backend, Waiter*& woken) {
    Waiter* w = first_waiter_;
    if (!w) return false;
    unlink_waiter(*w);
    if (backend) {
        // Only the loop watching it may take it out of its epoll, or off
        // its wheel: this one.
        if (backend->loop_ != w->loop) {
            backend->clock_.cancel();
            backend->detach();
        }
        w->backend = backend;
    } else {
        w->slot = true;
    }
    woken = w;
    return true;
}

void Upstream::ask_loop_to_hand_over(Backend* backend) {
    backend->loop_->post([this, backend] {
        backend->clock_.cancel(); // before it may change loops
        Ref<TriggerEvent> wake;
        bool close_it = false;
        {
            std::lock_guard lock(mutex_);
            Waiter* w = nullptr;
            if (hand_over(backend, w)) {
                wake = w->wake;
            } else if (idle_count_ < options_.keepalive) {
                push_idle(backend); // nobody waits any more
            } else {
                --open_; // and others went idle meanwhile
                close_it = true;
            }
        }
        if (close_it) delete backend;
        wake_up(wake);
    });
}

void Upstream::ask_loop_to_close(Backend* backend) {
    backend->loop_->post([this, backend] {
        Ref<TriggerEvent> wake;
        {
            std::lock_guard lock(mutex_);
            wake = free_slot();
        }
        delete backend;
        wake_up(wake);
    });
}

Ref<TriggerEvent> Upstream::free_slot() {
    --open_;
    Waiter* w = nullptr;
    // Above a max_conns a reload lowered, a slot freed is not given on.
    if (open_ >= options_.max_conns || !hand_over(nullptr, w)) return {};
    ++open_;
    return w->wake;
}

void Upstream::give_back_slot() {
    Ref<TriggerEvent> wake;
    {
        std::lock_guard lock(mutex_);
        wake = free_slot();
    }
    wake_up(wake);
}

// --- children held ------------------------------------------------------------

void Upstream::settle(Backend* backend) {
    if (backend->unanswered_) {
        backend->unanswered_ = false;
        backend->clock_.cancel(); // its stall clock; a kept one's stays (take())
    }
    if (!backend->stalled_) return; // stalled only while unanswered
    backend->stalled_ = false;
    std::lock_guard lock(mutex_);
    --stalled_;
    if (claims_ > stalled_) claims_ = stalled_; // none left for it
}

void Upstream::on_clock(Backend* backend) {
    if (backend->unanswered_)
        stall(backend);
    else
        expire(backend);
}

void Upstream::stall(Backend* backend) {
    // Ticks again until it answers: whatever is idle at a tick holds a child
    // nobody uses, which the backlog may be waiting for.
    Loop& loop = *backend->loop_;
    loop.timers().arm(backend->clock_, loop.now() + kStallMs);
    const bool claim_tick = ++backend->ticks_ % (kClaimMs / kStallMs) == 0;
    Backend* idle = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (!backend->stalled_) ++stalled_;
        backend->stalled_ = true;
        idle = take_idle();
        // Nothing idle under a lasting load: the next connection to free up
        // is closed for the backlog instead of handed on.
        if (!idle && claim_tick && claims_ < stalled_) ++claims_;
    }
    close_each(idle);
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (Upstream* other : r.upstreams)
        if (other != this && shares_a_server(*other)) other->close_idle();
}

Backend* Upstream::take_idle() {
    Backend* idle = idle_;
    for (Backend* b = idle; b; b = b->next_) b->idle_ = false;
    idle_ = nullptr;
    idle_count_ = 0;
    return idle;
}

void Upstream::close_each(Backend* idle) {
    // Out of the list: only the posted close touches them from here.
    while (Backend* b = idle) {
        idle = b->next_;
        b->prev_ = b->next_ = nullptr;
        ask_loop_to_close(b);
    }
}

void Upstream::close_idle() {
    Backend* idle = nullptr;
    {
        std::lock_guard lock(mutex_);
        idle = take_idle();
    }
    close_each(idle);
}

bool Upstream::shares_a_server(const Upstream& other) const {
    for (const Address& a : options_.servers)
        for (const Address& b : other.options_.servers)
            if (a == b) return true;
    return false;
}

void Upstream::expire(Backend* backend) {
    Ref<TriggerEvent> wake;
    {
        std::lock_guard lock(mutex_);
        if (!backend->idle_) return; // taken: its taker's post cancels the clock
        unlink_idle(backend);
        wake = free_slot();
    }
    delete backend;
    wake_up(wake);
}

// --- acquiring ----------------------------------------------------------------

Backend* Upstream::acquire(ClientWatch& client, AcquireError& error) {
    const std::uint64_t asked_ms = Loop::current()->now();
    bool queued = false;
    std::uint64_t handed_ms = asked_ms;
    Backend* backend = take(client, error, queued, handed_ms);
    if (UpstreamLoopCounters* counters = counters_here()) {
        if (queued) counters->waited.add(1);
        if (backend)
            counters->acquired.add(1);
        else if (error != AcquireError::client_gone)
            counters->failures.add(1);
        if (backend || error == AcquireError::queue_timeout)
            counters->count_wait(handed_ms - asked_ms);
    }
    return backend;
}

Backend* Upstream::take(ClientWatch& client, AcquireError& error, bool& queued,
                        std::uint64_t& handed_ms) {
    Loop& loop = *Loop::current();
    std::unique_lock lock(mutex_);
    for (Backend* b = idle_; b; b = b->next_) {
        if (b->loop_ == &loop) {
            // Its keepalive clock stays armed: given back idle, its deadline
            // is pushed back (a store), not placed again; firing while it is
            // busy, it finds it not idle (expire()) and does nothing.
            unlink_idle(b);
            return b;
        }
    }
    if (!first_waiter_ && open_ < options_.max_conns) {
        ++open_;
        lock.unlock();
        return connect(error);
    }

    Waiter waiter(loop, counters_here());
    waiter.prev = last_waiter_;
    if (last_waiter_)
        last_waiter_->next = &waiter;
    else
        first_waiter_ = &waiter;
    last_waiter_ = &waiter;
    ++waiting_;
    queued = true;
    // An idle connection on another loop: that loop hands it to the queue.
    if (idle_) {
        Backend* b = idle_;
        unlink_idle(b);
        ask_loop_to_hand_over(b);
    }
    lock.unlock();

    // A stop that destroys this coroutine while it waits unwinds through
    // here: the waiter leaves the queue, or a connection freed later would
    // be handed to a stack that is gone; what it was handed goes back.
    struct LeaveOnUnwind {
        Upstream* upstream;
        Waiter* waiter;
        ~LeaveOnUnwind() {
            if (!waiter) return;
            std::unique_lock lock(upstream->mutex_);
            if (waiter->queued) {
                upstream->unlink_waiter(*waiter);
                return;
            }
            lock.unlock();
            if (waiter->backend)
                upstream->release(waiter->backend, false);
            else
                upstream->give_back_slot();
        }
    } leave{this, &waiter};
    const int waited = client.await(*waiter.wake, queue_timeout_ms_);
    leave.waiter = nullptr;
    const bool client_gone = waited == -ECONNABORTED || waited == -ECANCELED;
    handed_ms = loop.now();

    // Woken by its trigger (0), it was handed something and taken out of
    // the queue under the lock before the trigger fired: nothing to check.
    if (waited != 0) {
        lock.lock();
        if (waiter.queued) {
            unlink_waiter(waiter);
            error = client_gone ? AcquireError::client_gone : AcquireError::queue_timeout;
            return nullptr;
        }
        lock.unlock();
    }
    // Handed something after all, whatever ended the wait.
    if (waiter.backend) {
        waiter.backend->attach(loop);
        if (!client_gone) return waiter.backend;
        release(waiter.backend, true);
    } else if (!client_gone) {
        return connect(error); // the slot is ours
    } else {
        give_back_slot();
    }
    error = AcquireError::client_gone;
    return nullptr;
}

Backend* Upstream::connect(AcquireError& error) {
    Loop& loop = *Loop::current();
    const std::size_t n = options_.servers.size();
    const std::size_t start = next_server_.fetch_add(1, std::memory_order_relaxed) % n;
    bool timed_out = false;
    // Servers not marked down first, in turn; then the others anyway.
    for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t i = (start + k) % n;
            const bool down = down_until_[i].load(std::memory_order_relaxed) > loop.now();
            if (down != (pass == 1)) continue;
            int failure = 0;
            if (Backend* b = connect_to(i, failure)) {
                down_until_[i].store(0, std::memory_order_relaxed);
                // Maybe in the backlog, until a first answer byte says not.
                b->unanswered_ = true;
                loop.timers().arm(b->clock_, loop.now() + kStallMs);
                return b;
            }
            timed_out = timed_out || failure == -ETIMEDOUT;
            if (failure != -ECANCELED) server_failures_[i].fetch_add(1, std::memory_order_relaxed);
            if (failure != -EAGAIN && failure != -ECANCELED) // full, or stopping: not down
                down_until_[i].store(loop.now() + kFailTimeoutMs, std::memory_order_relaxed);
            std::fprintf(stderr, "weft: upstream %s: connecting to %s: %s\n", options_.name.c_str(),
                         options_.servers[i].to_string().c_str(),
                         failure == -EAGAIN ? "its backlog is full" : std::strerror(-failure));
        }
    }
    give_back_slot(); // the first waiter may have better luck
    error = timed_out ? AcquireError::timed_out : AcquireError::unavailable;
    return nullptr;
}

Backend* Upstream::connect_to(std::size_t index, int& failure) {
    const Address& server = options_.servers[index];
    const int fd = ::socket(server.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        failure = -errno;
        return nullptr;
    }
    if (server.kind() != Address::Kind::unix_path) {
        const int on = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
    int result;
    do {
        result = ::connect(fd, server.sockaddr_ptr(), server.length());
    } while (result < 0 && errno == EINTR);
    if (result < 0 && errno != EINPROGRESS) {
        failure = -errno;
        ::close(fd);
        return nullptr;
    }
    auto* backend = new Backend(*this, fd, server, index);
    backend->attach(*Loop::current());
    if (result < 0) {
        // A TCP connect in progress: writable when it is done either way.
        PollEvent connected(backend->poll(), kWritable);
        const AwaitResult woke = await(connected, connect_timeout_ms_);
        int so_error = 0;
        socklen_t length = sizeof so_error;
        if (!woke.fired()) {
            so_error = woke.index == AwaitResult::kTimeout ? ETIMEDOUT : ECANCELED;
        } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length) != 0) {
            so_error = errno;
        }
        if (so_error) {
            failure = -so_error;
            delete backend;
            return nullptr;
        }
    }
    return backend;
}

// --- giving back --------------------------------------------------------------

void Upstream::release(Backend* backend, bool keep) {
    settle(backend);
    Ref<TriggerEvent> wake;
    bool close_it = false;
    {
        std::lock_guard lock(mutex_);
        Waiter* w = nullptr;
        if (keep) ++backend->requests_;
        // Claimed by a connection long in the backlog: closed, its child
        // takes the backlog's first, its slot goes to the first waiter.
        if (keep && claims_ > 0) {
            --claims_;
            keep = false;
        }
        if (open_ > options_.max_conns) keep = false; // a reload lowered it
        if (keep && hand_over(backend, w)) {
            wake = w->wake;
        } else if (keep && idle_count_ < options_.keepalive) {
            push_idle(backend);
        } else {
            close_it = true;
            wake = free_slot();
        }
    }
    if (close_it) delete backend;
    wake_up(wake);
}

void Upstream::retune(const UpstreamOptions& options) {
    connect_timeout_ms_ = options.connect_timeout_ms;
    read_timeout_ms_ = options.read_timeout_ms;
    queue_timeout_ms_ = options.queue_timeout_ms;
    keeps_connections_ = options.keepalive > 0;
    Backend* surplus = nullptr;
    std::vector<Ref<TriggerEvent>> admitted; // waiters a raised max_conns lets in
    {
        std::lock_guard lock(mutex_);
        options_.keepalive = options.keepalive;
        options_.max_conns = options.max_conns;
        options_.keepalive_timeout_ms = options.keepalive_timeout_ms;
        Waiter* w = nullptr;
        while (open_ < options_.max_conns && hand_over(nullptr, w)) {
            ++open_;
            admitted.push_back(w->wake);
        }
        // Idle connections above the new keepalive are closed now; busy ones
        // above the new max_conns close as they come back (release()).
        while (idle_count_ > options_.keepalive) {
            Backend* last = idle_;
            while (last->next_) last = last->next_;
            unlink_idle(last);
            last->next_ = surplus;
            surplus = last;
        }
    }
    close_each(surplus);
    for (const Ref<TriggerEvent>& wake : admitted) wake_up(wake);
}

Backend* Upstream::reconnect(Backend* backend, AcquireError& error) {
    settle(backend);
    delete backend; // its slot stays taken, for the new one
    return connect(error);
}

} // namespace weft::fastcgi
