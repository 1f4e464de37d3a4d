#include "loop/loop_group.hpp"

#include "loop/listener.hpp"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace weft {

namespace {

sigset_t handled_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1}) sigaddset(&set, s);
    return set;
}

std::vector<int> usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
            if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
    if (cpus.empty()) cpus.push_back(0);
    return cpus;
}

void notify(int fd) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
}

} // namespace

LoopGroup::LoopGroup(Options options) : options_(options) {}

LoopGroup::~LoopGroup() {
    for (std::thread& t : threads_)
        if (t.joinable()) t.join();
    loops_.clear(); // closes each loop's own listeners
    for (const Listening& listening : listening_)
        if (listening.shared) close_sockets(listening);
    if (control_fd_ >= 0) ::close(control_fd_);
}

int LoopGroup::open(std::string& error) {
    control_fd_ = eventfd(0, EFD_CLOEXEC);
    if (control_fd_ < 0) {
        error = std::string("eventfd: ") + std::strerror(errno);
        return -errno;
    }
    const unsigned count =
        options_.threads ? options_.threads : static_cast<unsigned>(usable_cpus().size());
    for (unsigned i = 0; i < count; ++i) {
        auto loop = std::make_unique<Loop>(table_, static_cast<std::uint16_t>(i));
        if (const int rc = loop->open(options_.io_backend)) {
            error = std::string("cannot start an event loop: ") + std::strerror(-rc);
            return rc;
        }
        loops_.push_back(std::move(loop));
    }
    return 0;
}

std::uint16_t LoopGroup::add_handler(Loop::Handler handler) {
    return add_handler_each([&handler](std::size_t) { return handler; });
}

std::uint16_t LoopGroup::add_handler_each(const std::function<Loop::Handler(std::size_t)>& make,
                                          bool takes_ring_input) {
    // Each loop numbers its handlers in the order added: the same number.
    std::uint16_t number = 0;
    for (std::size_t i = 0; i < loops_.size(); ++i)
        number = loops_[i]->add_handler(make(i), takes_ring_input);
    return number;
}

int LoopGroup::listen(const Address& address, std::uint16_t handler, std::string& error) {
    Listening listening;
    if (address.kind() == Address::Kind::unix_path) {
        // One socket: a path cannot be bound twice. Every loop watches it.
        const int fd = open_listener(address, error);
        if (fd < 0) return -1;
        listening.bound = address;
        listening.fds = {fd};
        listening.shared = true;
        listening.socket_file = address.path();
    } else {
        // A socket per loop on one port (SO_REUSEPORT): the kernel spreads
        // connections, and none crosses threads.
        listening.bound = address;
        for (std::size_t i = 0; i < loops_.size(); ++i) {
            const int fd =
                open_listener(listening.bound, error, {.defer_accept = options_.defer_accept});
            if (fd < 0) {
                close_sockets(listening);
                return -1;
            }
            listening.fds.push_back(fd);
            if (listening.bound.port() == 0)
                listening.bound = Address::of_socket(fd).value_or(listening.bound);
        }
    }
    return keep(std::move(listening), handler, error);
}

int LoopGroup::adopt(int fd, const Address& address, std::uint16_t handler, std::string& error,
                     bool keep_open) {
    if (address.kind() != Address::Kind::unix_path)
        tune_tcp_listener(fd, {.defer_accept = options_.defer_accept});
    Listening listening{address, {fd}, true, keep_open, {}};
    return keep(std::move(listening), handler, error);
}

int LoopGroup::keep(Listening listening, std::uint16_t handler, std::string& error) {
    listening.handler = handler;
    listening.held = running_ && holding_;
    if (!listening.held)
        if (const int rc = watch(listening, handler, error)) return rc;
    listening_.push_back(std::move(listening));
    return 0;
}

void LoopGroup::watch_held() {
    holding_ = false;
    std::string error; // running: a loop that cannot watch it says so itself
    for (Listening& listening : listening_) {
        if (!listening.held) continue;
        listening.held = false;
        watch(listening, listening.handler, error);
    }
}

int LoopGroup::watch(const Listening& listening, std::uint16_t handler, std::string& error) {
    for (std::size_t i = 0; i < loops_.size(); ++i) {
        Loop* loop = loops_[i].get();
        const int fd = listening.fds[listening.shared ? 0 : i];
        if (running_) {
            // The loop's listeners are its own: it adds this one itself.
            const bool shared = listening.shared;
            loop->post([loop, fd, handler, shared, at = listening.bound] {
                if (const int rc = loop->add_listener(fd, handler, shared))
                    std::fprintf(stderr, "weft: loop %u cannot listen on %s: %s\n",
                                 static_cast<unsigned>(loop->index()), at.to_string().c_str(),
                                 std::strerror(-rc));
            });
        } else if (const int rc = loop->add_listener(fd, handler, listening.shared)) {
            error = "listen on " + listening.bound.to_string() + ": " + std::strerror(-rc);
            if (!listening.shared) {
                // Loops before this one own theirs now; the rest are not taken.
                for (std::size_t j = i; j < listening.fds.size(); ++j) ::close(listening.fds[j]);
            } else if (!listening.keep_open) {
                close_sockets(listening);
            }
            return rc;
        }
    }
    return 0;
}

bool LoopGroup::close_listener(const Address& bound) {
    const auto it = std::find_if(listening_.begin(), listening_.end(),
                                 [&](const Listening& l) { return l.bound == bound; });
    if (it == listening_.end()) return false;
    Listening listening = std::move(*it);
    listening_.erase(it);
    if (listening.held) {
        // No loop has seen it.
        close_sockets(listening);
        return true;
    }
    if (!running_) {
        for (std::size_t i = 0; i < loops_.size(); ++i)
            loops_[i]->remove_listener(listening.fds[listening.shared ? 0 : i]);
        if (listening.shared) close_sockets(listening);
        return true;
    }
    // A unix socket's path is free at once: a reload that names it again
    // (before the loops have let go of this one) binds a new socket there.
    if (!listening.socket_file.empty()) {
        ::unlink(listening.socket_file.c_str());
        listening.socket_file.clear();
    }
    // Each loop lets go of its socket (closing its own); a shared one is
    // closed when none watches it any more.
    Hook each = [fds = listening.fds, shared = listening.shared](Loop& loop) {
        loop.remove_listener(fds[shared ? 0 : loop.index()]);
    };
    after_round(std::move(each), [this, listening = std::move(listening)] {
        if (listening.shared) close_sockets(listening);
    });
    return true;
}

void LoopGroup::close_sockets(const Listening& listening) {
    if (listening.keep_open) return;
    for (const int fd : listening.fds) {
        if (table_.fits(fd)) table_.reset(fd);
        ::close(fd);
    }
    if (!listening.socket_file.empty()) ::unlink(listening.socket_file.c_str());
}

std::vector<Address> LoopGroup::listening_on() const {
    std::vector<Address> bound;
    for (const Listening& listening : listening_) bound.push_back(listening.bound);
    return bound;
}

void LoopGroup::run_on_main(std::function<void()> fn) {
    {
        std::lock_guard lock(main_mutex_);
        main_calls_.push_back(std::move(fn));
    }
    notify(control_fd_);
}

void LoopGroup::after_round(Hook each, std::function<void()> then) {
    struct Round {
        std::atomic<std::size_t> left;
        Hook each;
        std::function<void()> then;
    };
    auto round =
        std::shared_ptr<Round>(new Round{{loops_.size()}, std::move(each), std::move(then)});
    for (auto& loop : loops_) {
        Loop* l = loop.get();
        l->post([this, l, round] {
            if (round->each) round->each(*l);
            if (--round->left == 0) run_on_main(std::move(round->then));
        });
    }
}

void LoopGroup::stop() {
    stop_asked_ = true;
    if (control_fd_ >= 0) notify(control_fd_);
}

void LoopGroup::stop_loops(std::chrono::milliseconds grace) {
    for (auto& loop : loops_) {
        Loop* l = loop.get();
        l->post([l, grace] { l->stop(grace); });
    }
}

void LoopGroup::drain_loops() {
    for (auto& loop : loops_) {
        Loop* l = loop.get();
        l->post([l] { l->close_connections(); });
    }
}

void LoopGroup::run() {
    // Threads inherit the mask: block first, then start them.
    const sigset_t signals = handled_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    const int signal_fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);

    const std::vector<int> cpus = usable_cpus();
    running_ = true;
    for (std::size_t i = 0; i < loops_.size(); ++i) {
        threads_.emplace_back([this, i, &cpus] {
            char name[16];
            std::snprintf(name, sizeof name, "weft-loop-%zu", i);
            pthread_setname_np(pthread_self(), name);
            if (options_.pin_cpus) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(cpus[i % cpus.size()], &set);
                pthread_setaffinity_np(pthread_self(), sizeof set, &set);
            }
            loops_[i]->run();
            ++loops_ended_;
            notify(control_fd_);
            // Until every loop has ended: the others may still hand it work.
            loops_[i]->linger();
        });
    }

    using Clock = std::chrono::steady_clock;
    enum class Stop { no, draining, graceful, now } stop = Stop::no;
    Clock::time_point drain_end{};
    const auto begin_stop = [&](bool at_once) {
        const bool first = stop == Stop::no;
        // The loops are told first: once the hook has said so (STOPPING=1),
        // a new connection finds its loop stopping or draining.
        if (at_once || !first) { // a second one means now
            stop_loops(std::chrono::milliseconds(0));
            stop = Stop::now;
        } else if (options_.drain_delay.count() > 0) {
            drain_loops();
            drain_end = Clock::now() + options_.drain_delay;
            stop = Stop::draining;
        } else {
            stop_loops(options_.grace);
            stop = Stop::graceful;
        }
        if (first && stopping_) stopping_();
    };
    Clock::time_point next_beat = Clock::now() + heartbeat_interval_;
    const auto post_beat = [this] {
        heartbeat_answers_ = 0;
        for (auto& loop : loops_) loop->post([this] { ++heartbeat_answers_; });
    };
    if (heartbeat_) post_beat();
    while (loops_ended_ < loops_.size()) {
        if (stop_asked_.exchange(false)) begin_stop(false);
        int timeout = -1;
        const Clock::time_point now = Clock::now();
        if (stop == Stop::draining) {
            if (now >= drain_end) {
                stop_loops(options_.grace);
                stop = Stop::graceful;
            } else {
                timeout = static_cast<int>(
                    std::chrono::ceil<std::chrono::milliseconds>(drain_end - now).count());
            }
        }
        if (heartbeat_) {
            if (now >= next_beat) {
                if (heartbeat_answers_ == loops_.size()) {
                    heartbeat_();
                    post_beat();
                }
                next_beat = now + heartbeat_interval_;
            }
            const int beat = static_cast<int>(
                std::chrono::ceil<std::chrono::milliseconds>(next_beat - now).count());
            timeout = timeout < 0 ? beat : std::min(timeout, beat);
        }
        pollfd fds[2] = {{control_fd_, POLLIN, 0}, {signal_fd, POLLIN, 0}};
        if (poll(fds, signal_fd >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR) break;
        if (fds[0].revents & POLLIN) {
            std::uint64_t count = 0;
            [[maybe_unused]] ssize_t n = ::read(control_fd_, &count, sizeof count);
            std::vector<std::function<void()>> calls;
            {
                std::lock_guard lock(main_mutex_);
                calls.swap(main_calls_);
            }
            for (auto& call : calls) call();
        }
        signalfd_siginfo info{};
        while (signal_fd >= 0 && ::read(signal_fd, &info, sizeof info) == sizeof info) {
            const int signo = static_cast<int>(info.ssi_signo);
            for (auto& loop : loops_) {
                Loop* l = loop.get();
                l->post([l, signo] { l->deliver_signal(signo); });
            }
            switch (info.ssi_signo) {
            case SIGTERM:
            case SIGINT:
                begin_stop(false);
                break;
            case SIGQUIT:
                begin_stop(true);
                break;
            case SIGHUP:
                if (stop != Stop::no)
                    std::fprintf(stderr, "weft: SIGHUP: stopping, the configuration stays\n");
                else if (reload_)
                    reload_();
                break;
            case SIGUSR1:
                if (reopen_logs_) reopen_logs_();
                break;
            }
        }
    }
    for (auto& loop : loops_) loop->end_lingering();
    for (std::thread& t : threads_) t.join();
    threads_.clear();

    // The signals stay blocked: one arriving after the last read would
    // otherwise kill the process on its way out. Take what is pending.
    if (signal_fd >= 0) {
        signalfd_siginfo info{};
        while (::read(signal_fd, &info, sizeof info) == sizeof info) {
        }
        ::close(signal_fd);
    }
}

} // namespace weft
