#pragma once
// An upstream: the FastCGI servers of one `upstream` section (or a handler's
// `pass`), and the connections open to them, shared by every loop.
//
// PHP-FPM gives each open connection a child of its own for as long as the
// connection lives, so an idle kept connection holds a child hostage, and a
// connection beyond the pool's children waits in its listen backlog until a
// child frees up. The pool caps the connections open across all loops
// (max_conns), and a request that finds them all busy waits in one FIFO
// queue, for queue_timeout at most (then 503), instead of opening more.
//
// Connections are kept open after a request (FCGI_KEEP_CONN) up to
// `keepalive` idle ones. A connection is watched by the epoll of the loop
// that last used it, so taking it again there costs no syscall. A connection
// that frees up goes to the first waiter whatever its loop: to another loop
// it is handed over (left by this loop's epoll, joined to that one's), and an
// idle one on a loop with nothing to do is handed over the same way when
// another loop needs it. No idle connection waits while a request queues.
// A connection is only ever touched by its loop's thread; so that a stop
// does not leave one out of reach, a loop that has ended its requests stays
// on its thread running posted calls (Loop::linger) until every loop has.
//
// Kept connections never hold a child that a request of ours waits for:
// - A new connection with no answer byte after kStallMs may sit in the
//   backlog (or run a slow script: from here the two look alike). While it
//   does ("stalled"), it closes every idle connection (each on its own
//   loop) at each kStallMs tick until it answers: each close frees a child
//   for the backlog, in the backlog's order, within a tick of a connection
//   going idle. A connection that frees up is kept or handed on as usual,
//   so a slow page costs only the idle connections present at its ticks
//   (none while every client holds one). Closing freed ones instead, as
//   before, made pages slower than kStallMs feed the rule: each close
//   opened a new connection, which stalled in turn (33 to 43 connects for
//   60 requests of a 150 ms page, 4 clients, max_conns 4; now 4).
//   Under a lasting load nothing goes idle, so every kClaimMs a stalled
//   connection that found nothing idle claims the next connection to free
//   up: closed instead of handed on, its slot to the first waiter. Closing
//   costs a reconnect, never a request. A connection that answered before
//   has a child.
// - An idle connection is closed after keepalive_timeout (a timer on its
//   loop's wheel), so the children go back to the pool for other clients
//   (a second server, a cron job) before PHP-FPM's own timeouts end them.
// So max_conns above pm.max_children is safe; it costs keep-alive only
// while the surplus waits in the backlog. The handler reports the first
// answer byte (Backend::answered); were it not to, a stall would last until
// the connection is given back: as safe, with more reconnects.
//
// Servers are tried round robin. One whose connect fails (refused, socket
// missing, timed out) is skipped for kFailTimeoutMs while others are tried;
// when every server has failed it is tried again anyway. A unix socket whose
// backlog is full answers EAGAIN: full, not in progress, so the next server
// is tried and none is marked down.

#include "event/poll_event.hpp"
#include "event/trigger_event.hpp"
#include "fastcgi/cgi_head.hpp"
#include "fastcgi/client_watch.hpp"
#include "fastcgi/record.hpp"
#include "loop/loop_stats.hpp"
#include "loop/timer_wheel.hpp"
#include "util/address.hpp"
#include "util/mutex.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace weft::fastcgi {

struct UpstreamOptions {
    std::string name; // for the error log
    std::vector<Address> servers;
    unsigned keepalive = 8;
    unsigned max_conns = 5;
    std::uint32_t connect_timeout_ms = 2'000;
    std::uint32_t read_timeout_ms = 60'000;
    std::uint32_t queue_timeout_ms = 60'000;
    std::uint32_t keepalive_timeout_ms = 4'000; // 0: idle ones stay open
};

class Upstream;

// What one loop counts of its requests through an upstream (the status
// handler's): written by that loop's thread only (loop_stats.hpp).
struct UpstreamLoopCounters {
    // The queue wait's histogram, from a request's arrival in acquire() to
    // the connection (or a slot to open one) handed to it, on its loop's
    // clock; one count per request that asked, 0 ms when none waited.
    // Bucket i holds waits up to kWaitBoundsMs[i]; the last, the rest.
    static constexpr std::uint32_t kWaitBoundsMs[] = {0,   1,   2,    5,    10,   25,    50,   100,
                                                      250, 500, 1000, 2500, 5000, 10000, 30000};
    static constexpr std::size_t kWaitBuckets = std::size(kWaitBoundsMs) + 1;
    Counter wait_ms[kWaitBuckets];
    Counter wait_sum_ms;
    Counter acquired; // requests given a connection
    Counter waited;   // of the requests that asked, those that queued
    Counter failures; // requests given none: no server (502), connect timed out (504), queue (503)

    // Not figures: the triggers of this loop's queued requests that ended,
    // kept for the next ones (a waiter allocates nothing once as many have
    // queued at once as will again); on this loop's thread only.
    static constexpr std::size_t kSpareTriggers = 64;
    std::vector<Ref<TriggerEvent>> spare_triggers;

    void count_wait(std::uint64_t ms);
};

// One open connection to a backend, with the buffers a request through it
// uses: lent to one request at a time, so the pool's memory is bounded by
// max_conns and a request allocates nothing.
class Backend {
public:
    static constexpr std::size_t kOutSize = 16 * 1024;  // records to the backend
    static constexpr std::size_t kInSize = 32 * 1024;   // records from it
    static constexpr std::size_t kHeadSize = 16 * 1024; // the CGI head, gathered

    int fd() const { return fd_; }
    // Watches the fd on the loop that holds the connection.
    PollProxy& poll() { return *proxy_; }
    // The server it is connected to, for the error log.
    const Address& server() const { return *server_; }
    // It served a request before: a kept connection the backend may have
    // closed meanwhile.
    bool reused() const { return requests_ > 0; }
    // The first byte of an answer came: a PHP-FPM child has it. Cheap when
    // it answered before (nothing to do); call it on every first read.
    void answered();

    char out[kOutSize];
    char in[kInSize];
    char head[kHeadSize];
    // The response's reading state, reset for each request.
    RecordReader reader;
    CgiHead cgi{head, kHeadSize};

private:
    friend class Upstream;
    Backend(Upstream& upstream, int fd, const Address& server, std::size_t server_index);
    // On its loop's thread (its timer is on that loop's wheel).
    ~Backend();
    // Watched by `loop` from now on.
    void attach(Loop& loop);
    // Watched by none (on the loop that watches it now).
    void detach();

    // Its timer, on the wheel of the loop that watches it: every kStallMs
    // from when a new connection was made, while no answer came;
    // keepalive_timeout while it is idle, and left so while a request of its
    // loop uses it (given back, the deadline is pushed back; firing first,
    // it finds it busy and ends); disarmed before it changes loops.
    struct Clock : Timer {
        Backend* backend;
    };

    Upstream* upstream_;
    int fd_;
    const Address* server_;
    std::size_t server_index_;
    std::uint32_t requests_ = 0;
    Loop* loop_ = nullptr; // the loop whose epoll watches it
    Clock clock_;
    // Touched on its loop's thread only: new, no answer byte yet; and, past
    // kStallMs so, counted in the pool's stalled_ (ticks_ of kStallMs).
    bool unanswered_ = false;
    bool stalled_ = false;
    std::uint32_t ticks_ = 0; // stall ticks so far
    bool idle_ = false;       // in the idle list (under the pool's lock)
    PollProxy* proxy_ = nullptr;
    alignas(PollProxy) unsigned char proxy_storage_[sizeof(PollProxy)];
    Backend* next_ = nullptr; // the idle list
    Backend* prev_ = nullptr;
};

// Why acquire() gave no connection.
enum class AcquireError : std::uint8_t {
    none,
    unavailable,   // no server accepted a connection: 502
    timed_out,     // connecting timed out: 504
    queue_timeout, // max_conns stayed busy for queue_timeout: 503
    client_gone,   // the client hung up while the request waited
};

class Upstream {
public:
    explicit Upstream(UpstreamOptions options);
    // After every loop has ended: closes the idle connections.
    ~Upstream();
    Upstream(const Upstream&) = delete;
    Upstream& operator=(const Upstream&) = delete;

    // A connection for a request of the running coroutine: an idle one kept
    // on this loop, a new one while fewer than max_conns are open, or the
    // first to free up after waiting in line. While it waits it also watches
    // `client` (a hang-up ends the wait). nullptr and why when there is none.
    Backend* acquire(ClientWatch& client, AcquireError& error);

    // Gives a connection back after a request: `keep` when it may serve
    // another (END_REQUEST came, nothing is left unread, FCGI_KEEP_CONN was
    // asked); otherwise it is closed. The running coroutine's loop must be
    // the one that acquired it.
    void release(Backend* backend, bool keep);

    // Closes `backend` (a kept connection that failed before any answer) and
    // opens a fresh one in its place, keeping its slot: nullptr and why if
    // that fails too.
    Backend* reconnect(Backend* backend, AcquireError& error);

    // A reload kept this pool (same name, same servers): its limits and
    // timeouts become `options`' from now, for requests that start later and
    // for connections as they come back. Its connections and the count of
    // them stay, so max_conns holds across the reload.
    void retune(const UpstreamOptions& options);
    // Closes every idle connection (a reload dropped the pool: it is
    // destroyed once the loops have run what this posts to them).
    void close_idle();

    // Whether requests should ask the backend to keep connections open.
    bool keeps_connections() const { return keeps_connections_; }
    // The name and servers stay; the rest is what the pool was made with
    // (retune() changes the pool's own copy).
    const UpstreamOptions& options() const { return options_; }
    std::uint32_t read_timeout_ms() const { return read_timeout_ms_; }

    // For tests and the error log.
    struct Counts {
        unsigned open;
        unsigned idle;
        unsigned waiting;
        unsigned stalled;
        unsigned max_conns;
    };
    Counts counts();

    // For the status handler: this pool's counters on loop `index`
    // (nullptr: that loop sent it no request yet); each server's failed
    // connects, and whether it is skipped now (a failure within
    // kFailTimeoutMs of `now_ms`, on the loops' clock).
    const UpstreamLoopCounters* loop_counters(unsigned index) const;
    std::uint64_t server_failures(std::size_t server) const;
    bool server_down(std::size_t server, std::uint64_t now_ms) const;
    // Calls fn for every pool alive (those a reload dropped, until they go).
    static void for_each(const std::function<void(Upstream&)>& fn);

    // How long a new connection may go without an answer byte before it is
    // taken for one in the backlog. PHP buffers output (Debian's php.ini:
    // output_buffering = 4096), so the first byte mostly comes when a script
    // ends: a new connection past this is in the backlog or runs a slow
    // script; for the one, waiting longer only delays it, for the other,
    // the idle connections closed cost a reconnect each. On the first use
    // of each connection only, never on a kept one. Not 0: every new
    // connection would then close the idle ones, whose loops open new ones
    // in turn; measured with 8 children, max_conns 8, 2 loops, 4,000
    // requests of a 5 ms script: 3,970 connects at 0 ms, 8 at 100 ms.
    static constexpr std::uint32_t kStallMs = 100;
    // Every kClaimMs a stalled connection that found nothing idle claims
    // the next connection to free up (closed instead of handed on): under a
    // lasting load none ever goes idle, and a request in the backlog waited
    // for the load to end (8.2 s of an 8 s one with 4 children, max_conns 8,
    // 12 clients; tests/integration/test_php_backlog.py). Per kStallMs it
    // fed itself: each close opened a new connection, which stalled in turn
    // when its page took longer (33 to 43 connects for 60 requests of a
    // 150 ms page); per second it costs a page slower than that at most a
    // reconnect per second it runs.
    static constexpr std::uint32_t kClaimMs = 1'000;

private:
    friend class Backend;
    struct Waiter;

    // acquire() without its counting: `queued` when it waited in line,
    // `handed_ms` when it was handed a connection or a slot (loop clock).
    Backend* take(ClientWatch& client, AcquireError& error, bool& queued, std::uint64_t& handed_ms);
    Backend* connect(AcquireError& error);
    Backend* connect_to(std::size_t server, int& error);
    void close(Backend* backend);
    // Under the lock: gives `backend` (or, if null, a free slot) to the
    // first waiter; false when nobody waits.
    bool hand_over(Backend* backend, Waiter*& woken);
    // Takes `waiter` out of the queue (under the lock).
    void unlink_waiter(Waiter& waiter);
    // A slot given up with no connection in it (a connect failed, a waiter
    // left): to the first waiter, if any.
    void give_back_slot();
    void push_idle(Backend* backend);
    void unlink_idle(Backend* backend);
    void ask_loop_to_hand_over(Backend* backend);
    // Closes an idle `backend` taken out of the list, on its own loop.
    void ask_loop_to_close(Backend* backend);
    // Under the lock: a connection's slot is free; to the first waiter, whose
    // trigger is returned, to fire once the lock is let go.
    Ref<TriggerEvent> free_slot();
    // On `backend`'s loop: it waits for no child any more (answered, or
    // given back); its stall, if any, ends.
    void settle(Backend* backend);
    // Its clock fired, on its loop: a stall, or the idle time is up.
    void on_clock(Backend* backend);
    void stall(Backend* backend);
    void expire(Backend* backend);
    // Under the lock: empties the idle list, returned (linked by next_).
    Backend* take_idle();
    // Closes each of a list take_idle() returned, on its loop.
    void close_each(Backend* idle);
    bool shares_a_server(const Upstream& other) const;
    // This loop's counters, made on its first request (nullptr past
    // kMaxCountedLoops).
    UpstreamLoopCounters* counters_here();

    // name and servers never change; keepalive, max_conns and
    // keepalive_timeout_ms change under mutex_ (retune()); the timeouts read
    // outside it are these atomics.
    UpstreamOptions options_;
    std::atomic<std::uint32_t> connect_timeout_ms_;
    std::atomic<std::uint32_t> read_timeout_ms_;
    std::atomic<std::uint32_t> queue_timeout_ms_;
    std::atomic<bool> keeps_connections_;
    std::atomic<std::uint32_t> next_server_{0};
    // Per server: until when (Loop::now() ms) it is skipped after a failure.
    std::unique_ptr<std::atomic<std::uint64_t>[]> down_until_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> server_failures_; // rare: fetch_add
    // By loop index; each made and written by its loop, read by any.
    std::unique_ptr<std::atomic<UpstreamLoopCounters*>[]> loop_counters_;

    Mutex mutex_;       // taken twice by every request: a lean one
    unsigned open_ = 0; // connections open or being opened
    unsigned idle_count_ = 0;
    Backend* idle_ = nullptr; // most recently used first
    Waiter* first_waiter_ = nullptr;
    Waiter* last_waiter_ = nullptr;
    unsigned waiting_ = 0;
    unsigned stalled_ = 0; // new connections unanswered for kStallMs
    unsigned claims_ = 0;  // freed connections to close, at most stalled_
};

inline void Backend::answered() {
    if (unanswered_) upstream_->settle(this);
}

} // namespace weft::fastcgi
