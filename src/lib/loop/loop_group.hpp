#pragma once
// The server's loops: one per thread, started together, sharing one fd table,
// stopped together.
//
// Signals (after Parrot): run() blocks SIGTERM, SIGINT, SIGQUIT, SIGHUP and
// SIGUSR1 in every thread, receives them in one place through a signalfd,
// and broadcasts them to the loops: SIGTERM or SIGINT stop gracefully (a
// second one stops at once), SIGQUIT stops at once, SIGHUP and SIGUSR1 run
// the reload and reopen-logs functions on run()'s thread. SIGPIPE is ignored.
//
// A graceful stop: the stopping hook is called at once; for drain_delay the
// loops still accept and serve, each response closing its connection (a
// load balancer takes the server out meanwhile); then they stop accepting,
// and running requests have `grace` to finish before the rest are cut.

#include "loop/io_backend.hpp"
#include "loop/loop.hpp"
#include "util/address.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace weft {

class LoopGroup {
public:
    struct Options {
        unsigned threads = 0;                     // 0: one loop per CPU this process may run on
        bool pin_cpus = false;                    // loop i runs on the i-th of those CPUs
        std::chrono::milliseconds grace{10'000};  // for running requests at stop
        std::chrono::milliseconds drain_delay{0}; // serving on after SIGTERM
        bool defer_accept = false;                // listener.hpp's ListenOptions
        // Usable here (io_backend.hpp); the default, Loop::open()'s, lets
        // the tests' groups run on WEFT_IO_BACKEND's.
        IoBackend io_backend = default_io_backend();
    };
    using Hook = std::function<void(Loop&)>;

    explicit LoopGroup(Options options);
    ~LoopGroup();
    LoopGroup(const LoopGroup&) = delete;
    LoopGroup& operator=(const LoopGroup&) = delete;

    // Creates the loops; 0, or -errno with a reason in `error`.
    int open(std::string& error);
    // A handler for connections, on every loop under one number (before
    // run()).
    std::uint16_t add_handler(Loop::Handler handler);
    // One made for each loop: `make(i)` is loop i's. `takes_ring_input`:
    // as Loop::add_handler's.
    std::uint16_t add_handler_each(const std::function<Loop::Handler(std::size_t)>& make,
                                   bool takes_ring_input = false);
    // Listens on `address` in every loop; `handler` serves each connection.
    // Port 0 picks one port for all loops (listening_on() tells which).
    // Before run(), or during it on run()'s thread (a reload): the loops
    // start watching the sockets at their next turn.
    int listen(const Address& address, std::uint16_t handler, std::string& error);
    int listen(const Address& address, Loop::Handler handler, std::string& error) {
        return listen(address, add_handler(std::move(handler)), error);
    }
    // Serves connections on `fd`, a listening socket opened elsewhere (one
    // systemd passed), bound to `address`. Every loop watches the one socket,
    // as for a unix listener. The group closes it, unless `keep_open` (the
    // caller's to close, after the group).
    int adopt(int fd, const Address& address, std::uint16_t handler, std::string& error,
              bool keep_open = false);
    int adopt(int fd, const Address& address, Loop::Handler handler, std::string& error) {
        return adopt(fd, address, add_handler(std::move(handler)), error);
    }
    // While running: the listeners listen() and adopt() open from now are
    // only opened (the kernel queues their connections), not yet watched by
    // any loop, until watch_held(): a reload opens its new listeners before
    // it commits, and serves them only once the loops serve its server.
    void hold_new_listeners() { holding_ = true; }
    void watch_held();
    // Stops listening on `bound` (as listening_on() names it): the loops stop
    // watching it at their next turn, and its sockets are closed once every
    // loop has (a unix socket's file is removed at once, for a listener named
    // again meanwhile). Connections it gave stay.
    // On run()'s thread, or before run(). false if nothing listens there.
    bool close_listener(const Address& bound);
    // The addresses listened on, ports resolved, in listen()/adopt() order.
    std::vector<Address> listening_on() const;

    // Runs `fn` on run()'s thread at its next turn; from any thread, while
    // run() runs (else it never runs).
    void run_on_main(std::function<void()> fn);
    // Runs `each` on every loop (on its thread, in post() order), then
    // `then` on run()'s thread once every loop has: everything posted to the
    // loops before this has run by then.
    void after_round(Hook each, std::function<void()> then);

    // Options::grace and drain_delay for a stop that begins later; on run()'s
    // thread (a reload), or before run().
    void set_stop_times(std::chrono::milliseconds grace, std::chrono::milliseconds drain_delay) {
        options_.grace = grace;
        options_.drain_delay = drain_delay;
    }

    // Called on run()'s thread for SIGHUP (not once a stop has begun).
    void on_reload(std::function<void()> fn) { reload_ = std::move(fn); }
    // Called on run()'s thread for SIGUSR1.
    void on_reopen_logs(std::function<void()> fn) { reopen_logs_ = std::move(fn); }
    // Called on run()'s thread when a stop begins (SIGTERM, stop(),
    // SIGQUIT), before drain_delay.
    void on_stopping(std::function<void()> fn) { stopping_ = std::move(fn); }
    // Called on run()'s thread every `interval`, but only when every loop has
    // run a call posted to it since the last time: proof that the loops
    // still turn, not that a thread still runs (systemd's watchdog).
    void on_heartbeat(std::chrono::milliseconds interval, std::function<void()> fn) {
        heartbeat_interval_ = interval;
        heartbeat_ = std::move(fn);
    }

    // Runs every loop on its own thread and returns when all have stopped.
    // Handles the signals above meanwhile; they stay blocked in the calling
    // thread afterwards (block them at start-up, before any other thread
    // exists, so that no thread of the process takes one by default).
    void run();
    // Stops as SIGTERM does; from any thread, before or during run().
    void stop();

    std::size_t size() const { return loops_.size(); }
    Loop& loop(std::size_t i) { return *loops_[i]; }

private:
    struct Listening {
        Address bound;
        std::vector<int> fds; // one per loop, or one shared by all
        bool shared = false;
        bool keep_open = false;  // the caller closes it (a passed socket)
        std::string socket_file; // a unix socket this group made; removed at close
        std::uint16_t handler = 0;
        bool held = false; // opened, not watched yet (hold_new_listeners)
    };

    void stop_loops(std::chrono::milliseconds grace);
    // Every loop watches `listening`'s sockets from now (before run()) or
    // from its next turn.
    int watch(const Listening& listening, std::uint16_t handler, std::string& error);
    // Records `listening`, watched now or held.
    int keep(Listening listening, std::uint16_t handler, std::string& error);
    void close_sockets(const Listening& listening);
    void drain_loops();

    Options options_;
    FdTable table_;
    std::vector<std::unique_ptr<Loop>> loops_;
    std::vector<Listening> listening_;
    std::vector<std::thread> threads_;
    bool running_ = false; // run() has started the loops
    bool holding_ = false;
    std::mutex main_mutex_;
    std::vector<std::function<void()>> main_calls_; // run_on_main's, guarded by main_mutex_
    std::function<void()> reload_;
    std::function<void()> reopen_logs_;
    std::function<void()> stopping_;
    std::chrono::milliseconds heartbeat_interval_{0};
    std::function<void()> heartbeat_;
    std::atomic<std::size_t> heartbeat_answers_{0}; // loops that ran the last beat's post
    int control_fd_ = -1;                           // eventfd: stop() asked, or a loop ended
    std::atomic<bool> stop_asked_{false};
    std::atomic<unsigned> loops_ended_{0};
};

} // namespace weft
