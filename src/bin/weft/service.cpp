#include "service.hpp"

#include "config/parser.hpp"
#include "http/access_log.hpp"
#include "http/connection.hpp"
#include "loop/loop_stats.hpp"
#include "util/log_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft {

namespace {

// error_log as a file: fd 2 is that file, so every thread's fprintf(stderr)
// (one write(2) a line, O_APPEND) goes there. Reopening (SIGUSR1, after a
// rotation, or a reload naming another file) dup2s the new file onto fd 2:
// a line written meanwhile goes whole to one file or the other. A file that
// cannot be opened keeps the old one. "stderr" is fd 2 as weft found it
// (`first_stderr`, a copy kept from the start), for a reload that goes back.
int open_error_log(const std::string& target, int first_stderr, std::string& error) {
    if (target == "stderr") {
        if (first_stderr >= 0 && ::dup2(first_stderr, 2) < 0) {
            error = std::string("cannot go back to stderr: ") + std::strerror(errno);
            return -1;
        }
        return 0;
    }
    const int fd = open_log_file(target);
    if (fd < 0 || ::dup2(fd, 2) < 0) {
        error = "cannot open error log " + target + ": " + std::strerror(fd < 0 ? -fd : errno);
        if (fd >= 0) ::close(fd);
        return -1;
    }
    ::close(fd);
    return 0;
}

LoopGroup::Options loop_options(const config::Config& config, const BackendChoice& backend) {
    LoopGroup::Options options;
    options.io_backend = backend.backend;
    options.threads = config.threads;
    options.defer_accept = true; // HTTP clients speak first
    options.grace = config.shutdown_timeout;
    options.drain_delay = config.drain_delay;
    return options;
}

} // namespace

Service::Service(config::Config config, std::string config_file)
    : config_(std::move(config)), backend_(choose_backend(config_)),
      config_file_(std::move(config_file)), loops_(loop_options(config_, backend_)) {
    config_.io_backend = io_backend_name(backend_.backend);
}

Service::~Service() {
    if (first_stderr_ >= 0) ::close(first_stderr_);
    for (const systemd::PassedSocket& socket : passed_)
        if (socket.open) ::close(socket.fd);
}

int Service::run() {
    std::string error;
    if (start(error) != 0) {
        std::fprintf(stderr, "weft: %s\n", error.c_str());
        return 1;
    }
    loops_.run();
    return 0;
}

int Service::start(std::string& error) {
    // Before any file is opened: fds 3.. are still only what was passed.
    passed_ = systemd::take_passed_sockets();
    // What stderr was, for a reload that sets error_log back to it.
    first_stderr_ = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
    identity_ = resolve_identity(config_, error);
    if (!error.empty() || loops_.open(error) != 0) return -1;
    // A ring the kernel refused at open (ENOMEM, say) left that loop on
    // epoll, and said so: what runs is the loops' word.
    config_.io_backend = io_backend_name(loops_.loop(0).backend());
    serving_ = std::make_unique<Serving>(loops_.size(), [this](http::Server* server) {
        loops_.run_on_main([this, server] { release(server); });
    });
    // Connections read through http::ClientSocket: ring input for them.
    handler_ =
        loops_.add_handler_each([this](std::size_t i) { return serving_->handler(i); }, true);
    proxied_handler_ =
        loops_.add_handler_each([this](std::size_t i) { return serving_->handler(i, true); }, true);

    // Socket activation: a listener systemd passed is used as it is; the
    // others are opened here. Every passed socket must be named.
    if (!systemd::match_passed_sockets(config_.listeners, passed_, error)) return -1;
    for (const Address& address : config_.listeners)
        if (listen(address,
                   std::find(config_.proxy_protocol.begin(), config_.proxy_protocol.end(),
                             address) != config_.proxy_protocol.end(),
                   error) != 0)
            return -1;
    // Everything else is opened inside the chroot.
    if (!config_.chroot.empty()) systemd::connect_notify_socket();
    if (!config_.chroot.empty() && (::chroot(config_.chroot.c_str()) != 0 || ::chdir("/") != 0)) {
        error = "chroot " + config_.chroot + ": " + std::strerror(errno);
        return -1;
    }
    std::unique_ptr<BuiltServer> built = build_server(config_, error, Build::serving, &pools_);
    if (!built || open_error_log(config_.error_log, first_stderr_, error) != 0) return -1;
    if (::geteuid() == 0 && identity_) {
        // Log files opened as root belong to the user, as nginx does: after a
        // rotation the user can reopen what it writes to.
        const bool error_file = config_.error_log != "stderr";
        if ((error_file &&
             give_log_file(2, config_.error_log, identity_->uid, identity_->gid) != 0) ||
            (built->access_log && built->access_log->give_to(identity_->uid, identity_->gid) != 0))
            std::fprintf(stderr, "weft: cannot give the log files to user %s: %s\n",
                         identity_->user.c_str(), std::strerror(errno));
    } else if (::geteuid() == 0) {
        std::fprintf(stderr, "weft: running as root: set user = NAME to serve as another user\n");
    }
    if (const std::string lines = backend_warnings(backend_); !lines.empty())
        std::fputs(lines.c_str(), stderr);
    serving_->start(built->server);
    built_.push_back(std::move(built));

    loops_.on_reopen_logs([this] { reopen_logs(); });
    loops_.on_reload([this] { reload(); });
    if (identity_ && drop_privileges(*identity_, error) != 0) return -1;
    describe(*built_.back(), loops_.listening_on());
    note_process_start(WEFT_VERSION); // the status handler's uptime and version
    std::printf("weft %s: %zu loop%s on %s; SIGTERM or Ctrl-C stops, SIGHUP reloads\n",
                WEFT_VERSION, loops_.size(), loops_.size() == 1 ? "" : "s",
                config_.io_backend.c_str());
    std::fflush(stdout);
    // Every loop listens (the sockets are open and registered; a connection
    // made now waits in the backlog until a loop accepts it).
    systemd::notify("READY=1\nSTATUS=" + status_line());
    loops_.on_stopping([] { systemd::notify("STOPPING=1\nSTATUS=draining"); });
    if (const auto interval = systemd::watchdog_interval())
        loops_.on_heartbeat(*interval, [] { systemd::notify("WATCHDOG=1"); });
    return 0;
}

int Service::listen(const Address& address, bool proxied, std::string& error) {
    const std::uint16_t handler = proxied ? proxied_handler_ : handler_;
    const auto passed = std::find_if(passed_.begin(), passed_.end(), [&](const auto& socket) {
        return socket.address && systemd::same_address(*socket.address, address);
    });
    if (passed != passed_.end()) {
        // Kept open across reloads (a reload that drops the listener and a
        // later one that names it again find it here); closed at exit.
        if (loops_.adopt(passed->fd, address, handler, error, true) != 0) return -1;
        std::printf("weft: %s: the socket systemd passed (fd %d)\n", address.to_string().c_str(),
                    passed->fd);
    } else if (loops_.listen(address, handler, error) != 0) {
        return -1;
    }
    listeners_.push_back({address, loops_.listening_on().back()});
    return 0;
}

std::string Service::start_only_changes(const config::Config& next) const {
    std::string changed;
    const auto note = [&changed](bool differs, const char* key) {
        if (!differs) return;
        if (!changed.empty()) changed += ", ";
        changed += key;
    };
    note(next.threads != config_.threads, "threads");
    note(next.user != config_.user, "user");
    note(next.group != config_.group, "group");
    note(next.chroot != config_.chroot, "chroot");
    // A listener keeps the handler it was opened with.
    note(next.proxy_protocol != config_.proxy_protocol, "proxy_protocol");
    return changed;
}

void Service::reload() {
    systemd::notify(systemd::reloading_state());
    const auto done = [this](const std::string& failure) {
        if (!failure.empty())
            std::fprintf(stderr, "weft: reload: %s; still serving the configuration before\n",
                         failure.c_str());
        systemd::notify("READY=1\nSTATUS=" + status_line());
    };
    if (config_file_.empty()) return done("started without -c, there is no file to re-read");

    config::ConfigError config_error;
    std::optional<config::Config> next =
        config::load_file(config_file_, config::process_environment(), config_error);
    if (!next && !config_.chroot.empty())
        return done(config_error.text() + " (read inside the chroot " + config_.chroot + ")");
    if (!next) return done(config_error.text());
    if (const std::string changed = start_only_changes(*next); !changed.empty())
        return done(changed + " change only at a restart");
    // The loops keep their backend; the rest of the file applies.
    // Said only when a restart would run another one than the loops do (a
    // file asking for epoll while uring is refused changes nothing).
    if (const BackendChoice wanted = choose_backend(*next);
        wanted.backend != loops_.loop(0).backend())
        std::fprintf(stderr,
                     "weft: reload: io_backend = %s takes effect at a restart; the loops keep "
                     "running %s\n",
                     std::string(io_backend_name(wanted.backend)).c_str(),
                     config_.io_backend.c_str());
    next->io_backend = config_.io_backend;

    // Everything that can fail, first: the server, the error log, the new
    // listeners (opened, not served yet). A failure undoes what was done.
    std::string error;
    std::unique_ptr<BuiltServer> built = build_server(*next, error, Build::serving, &pools_);
    int saved_error_log = -1;
    const std::size_t kept = listeners_.size();
    const auto undo = [&] {
        while (listeners_.size() > kept) {
            loops_.close_listener(listeners_.back().bound);
            listeners_.pop_back();
        }
        loops_.watch_held();
        if (saved_error_log >= 0) {
            ::dup2(saved_error_log, 2);
            ::close(saved_error_log);
        }
        built.reset();
        pools_.abandon();
        done(error);
    };
    if (!built) return undo();
    if (next->error_log != config_.error_log) {
        saved_error_log = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (open_error_log(next->error_log, first_stderr_, error) != 0) {
            if (saved_error_log >= 0) ::close(saved_error_log);
            saved_error_log = -1; // fd 2 did not change
            return undo();
        }
    }
    const auto listed = [](const std::vector<Address>& list, const Address& a) {
        return std::find(list.begin(), list.end(), a) != list.end();
    };
    loops_.hold_new_listeners();
    for (const Address& address : next->listeners)
        if (!listed(config_.listeners, address) &&
            listen(address, listed(next->proxy_protocol, address), error) != 0)
            return undo();
    if (saved_error_log >= 0) ::close(saved_error_log);

    // Commit: nothing fails from here. Each loop takes the new server, then
    // the new listeners.
    pools_.commit();
    http::Server& server = built->server;
    serving_->prepare(server);
    for (std::size_t i = 0; i < loops_.size(); ++i) {
        Loop& loop = loops_.loop(i);
        loop.post([this, &loop, &server] { serving_->replace(loop, server); });
    }
    loops_.watch_held();
    built_.push_back(std::move(built));
    // The listeners the file no longer names.
    std::erase_if(listeners_, [&](const Listener& listener) {
        if (listed(next->listeners, listener.configured)) return false;
        loops_.close_listener(listener.bound);
        return true;
    });
    loops_.set_stop_times(next->shutdown_timeout, next->drain_delay);
    config_ = std::move(*next);
    ++reloads_;
    process_stats().reloads.fetch_add(1, std::memory_order_relaxed);
    describe(*built_.back(), loops_.listening_on());
    std::fflush(stdout);
    std::fprintf(stderr, "weft: reloaded %s (reload %u)\n", config_file_.c_str(), reloads_);
    done({});
}

void Service::release(http::Server* server) {
    // Its access log may hold lines in a loop's buffer: each loop writes its
    // out, then the server goes (and the log, the pools no newer server uses).
    const auto it = std::find_if(built_.begin(), built_.end(),
                                 [server](const auto& built) { return &built->server == server; });
    if (it == built_.end()) return;
    http::AccessLog* log = (*it)->access_log.get();
    loops_.after_round(
        [log](Loop&) {
            if (log) log->flush_this_thread();
        },
        [this, it] {
            built_.erase(it);
            for (std::shared_ptr<fastcgi::Upstream>& pool : pools_.take_unused()) {
                // Its idle connections are closed on their loops; it goes once
                // every loop has run those closes.
                pool->close_idle();
                loops_.after_round({}, [pool = std::move(pool)] {});
            }
        });
}

void Service::reopen_logs() {
    // Each loop writes out its buffered access-log lines, then both logs are
    // reopened here; a line written meanwhile goes out later, to the new
    // file: each line lands in exactly one of them.
    http::AccessLog* log = built_.back()->access_log.get();
    loops_.after_round(
        [log](Loop&) {
            if (log) log->flush_this_thread();
        },
        [this, log] {
            std::string error;
            if (open_error_log(config_.error_log, first_stderr_, error) != 0)
                std::fprintf(stderr, "weft: SIGUSR1: %s (still writing to the old file)\n",
                             error.c_str());
            if (!log) return;
            if (const int result = log->reopen(); result < 0)
                std::fprintf(stderr,
                             "weft: SIGUSR1: cannot reopen access log %s: %s (still writing to "
                             "the old file)\n",
                             log->target().c_str(), std::strerror(-result));
        });
}

std::string Service::status_line() const {
    std::string line = "serving " + std::to_string(loops_.size()) +
                       (loops_.size() == 1 ? " loop on " : " loops on ");
    const char* separator = "";
    for (const Address& a : loops_.listening_on()) {
        line += separator + a.to_string();
        separator = ", ";
    }
    if (reloads_ > 0) line += "; " + std::to_string(reloads_) + " reloads";
    return line;
}

} // namespace weft
