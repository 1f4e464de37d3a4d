#pragma once
// The server's loops: one per thread, started together, sharing one fd table,
// stopped together.
//
// Signals (after Parrot): run() blocks SIGTERM, SIGINT, SIGQUIT, SIGHUP and
// SIGUSR1 in every thread, receives them in one place through a signalfd,
// and broadcasts them to the loops: SIGTERM or SIGINT stop gracefully (a
// second one stops at once), SIGQUIT stops at once, SIGHUP runs the reload
// hook and SIGUSR1 the reopen-logs hook on every loop. SIGPIPE is ignored.
//
// A graceful stop: the stopping hook is called at once; for drain_delay the
// loops still accept and serve, each response closing its connection (a
// load balancer takes the server out meanwhile); then they stop accepting,
// and running requests have `grace` to finish before the rest are cut.

#include "loop/loop.hpp"
#include "util/address.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
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
    };
    using Hook = std::function<void(Loop&)>;

    explicit LoopGroup(Options options);
    ~LoopGroup();
    LoopGroup(const LoopGroup&) = delete;
    LoopGroup& operator=(const LoopGroup&) = delete;

    // Creates the loops; 0, or -errno with a reason in `error`.
    int open(std::string& error);
    // Listens on `address` in every loop; `handler` serves each connection.
    // Port 0 picks one port for all loops (listening_on() tells which).
    int listen(const Address& address, Loop::Handler handler, std::string& error);
    // Serves connections on `fd`, a listening socket opened elsewhere (one
    // systemd passed), bound to `address`. Every loop watches the one socket,
    // as for a unix listener; the group closes it.
    int adopt(int fd, const Address& address, Loop::Handler handler, std::string& error);
    // The addresses listened on, ports resolved, in listen()/adopt() order.
    const std::vector<Address>& listening_on() const { return bound_; }

    void on_reload(Hook hook) { reload_ = std::move(hook); }
    void on_reopen_logs(Hook hook) { reopen_logs_ = std::move(hook); }
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
    void stop_loops(std::chrono::milliseconds grace);
    void drain_loops();
    void broadcast(const Hook& hook);

    Options options_;
    FdTable table_;
    std::vector<std::unique_ptr<Loop>> loops_;
    std::vector<int> shared_listeners_; // unix sockets, watched by every loop
    std::vector<Address> bound_;
    std::vector<std::string> socket_files_; // unix sockets this group made; removed at exit
    std::vector<std::thread> threads_;
    Hook reload_;
    Hook reopen_logs_;
    std::function<void()> stopping_;
    std::chrono::milliseconds heartbeat_interval_{0};
    std::function<void()> heartbeat_;
    std::atomic<std::size_t> heartbeat_answers_{0}; // loops that ran the last beat's post
    int control_fd_ = -1;                           // eventfd: stop() asked, or a loop ended
    std::atomic<bool> stop_asked_{false};
    std::atomic<unsigned> loops_ended_{0};
};

} // namespace weft
