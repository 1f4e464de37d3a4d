// weft: the command line. It loads and checks the configuration, builds the
// server it describes, and runs one loop per core until SIGTERM or SIGINT.

#include "build_server.hpp"
#include "command_line.hpp"
#include "config/parser.hpp"
#include "http/connection.hpp"
#include "loop/loop_group.hpp"
#include "privilege.hpp"
#include "util/systemd.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace weft;

// One line per listener and handler: what this configuration serves.
void describe(const BuiltServer& built, const std::vector<Address>& listeners) {
    for (const Address& a : listeners) {
        const std::string url =
            a.kind() == Address::Kind::unix_path ? a.to_string() : "http://" + a.to_string() + "/";
        std::printf("weft: listening on %s\n", url.c_str());
    }
    for (const http::Handler* handler : built.handlers)
        std::printf("weft:   %s  %s\n", handler->route().text().c_str(),
                    handler->describe().c_str());
}

// error_log as a file: fd 2 is that file, so every thread's fprintf(stderr)
// (one write(2) a line, O_APPEND) goes there. Reopening (SIGUSR1, after a
// rotation) dup2s the new file onto fd 2: a line written meanwhile goes whole
// to one file or the other. A file that cannot be opened keeps the old one.
int open_error_log(const std::string& target, std::string& error) {
    if (target == "stderr") return 0;
    const int fd = ::open(target.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0 || ::dup2(fd, 2) < 0) {
        error = "cannot open error log " + target + ": " + std::strerror(errno);
        if (fd >= 0) ::close(fd);
        return -1;
    }
    ::close(fd);
    return 0;
}

// SIGUSR1, on each loop: its buffered access-log lines go out, then loop 0
// reopens both logs. A loop that flushes later writes to the new file: each
// line lands in exactly one of them.
void reopen_logs(Loop& loop, http::AccessLog* access_log, const std::string& error_log) {
    if (access_log) access_log->flush_this_thread();
    if (loop.index() != 0) return;
    std::string error;
    if (open_error_log(error_log, error) != 0)
        std::fprintf(stderr, "weft: SIGUSR1: %s (still writing to the old file)\n", error.c_str());
    if (access_log) {
        if (const int result = access_log->reopen(); result < 0)
            std::fprintf(stderr,
                         "weft: SIGUSR1: cannot reopen access log %s: %s (still writing to the "
                         "old file)\n",
                         access_log->target().c_str(), std::strerror(-result));
    }
}

// STATUS= for systemd: one line, what this run serves.
std::string status_line(const LoopGroup& loops) {
    std::string line = "serving " + std::to_string(loops.size()) +
                       (loops.size() == 1 ? " loop on " : " loops on ");
    const char* separator = "";
    for (const Address& a : loops.listening_on()) {
        line += separator + a.to_string();
        separator = ", ";
    }
    return line;
}

int serve(const config::Config& config) {
    // Blocked before any thread exists, so that only the LoopGroup's signalfd
    // ever takes them (loop_group.hpp).
    sigset_t signals;
    sigemptyset(&signals);
    for (int signo : {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1}) sigaddset(&signals, signo);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);

    std::string error;
    const std::optional<Identity> identity = resolve_identity(config, error);
    std::unique_ptr<BuiltServer> built = error.empty() ? build_server(config, error) : nullptr;
    if (!built || open_error_log(config.error_log, error) != 0) {
        std::fprintf(stderr, "weft: %s\n", error.c_str());
        return 1;
    }
    if (::geteuid() == 0 && identity) {
        // Log files opened as root belong to the user, as nginx does: after a
        // rotation the user can reopen what it writes to.
        const bool error_file = config.error_log != "stderr";
        if ((error_file && ::fchown(2, identity->uid, identity->gid) != 0) ||
            (built->access_log && built->access_log->give_to(identity->uid, identity->gid) != 0))
            std::fprintf(stderr, "weft: cannot give the log files to user %s: %s\n",
                         identity->user.c_str(), std::strerror(errno));
    } else if (::geteuid() == 0) {
        std::fprintf(stderr, "weft: running as root: set user = NAME to serve as another user\n");
    }
    LoopGroup::Options options;
    options.threads = config.threads;
    options.defer_accept = true; // HTTP clients speak first
    options.grace = config.shutdown_timeout;
    options.drain_delay = config.drain_delay;
    LoopGroup loops(options);
    if (loops.open(error) != 0) {
        std::fprintf(stderr, "weft: %s\n", error.c_str());
        return 1;
    }
    // Socket activation: a listener systemd passed is used as it is; the
    // others are opened here.
    const std::vector<systemd::PassedSocket> passed = systemd::take_passed_sockets();
    const auto served_by = systemd::match_passed_sockets(config.listeners, passed, error);
    if (!served_by) {
        for (const systemd::PassedSocket& socket : passed) ::close(socket.fd);
        std::fprintf(stderr, "weft: %s\n", error.c_str());
        return 1;
    }
    const http::Server& server = built->server;
    const auto handler = [&server](int fd) { return http::serve_connection(fd, server); };
    for (std::size_t i = 0; i < config.listeners.size(); ++i) {
        const Address& address = config.listeners[i];
        const int passed_index = (*served_by)[i];
        const int rc = passed_index < 0
                           ? loops.listen(address, handler, error)
                           : loops.adopt(passed[static_cast<std::size_t>(passed_index)].fd, address,
                                         handler, error);
        if (rc != 0) {
            std::fprintf(stderr, "weft: %s\n", error.c_str());
            return 1;
        }
        if (passed_index >= 0)
            std::printf("weft: %s: the socket systemd passed (fd %d)\n",
                        address.to_string().c_str(),
                        passed[static_cast<std::size_t>(passed_index)].fd);
    }
    loops.on_reopen_logs([log = built->access_log.get(), &config](Loop& loop) {
        reopen_logs(loop, log, config.error_log);
    });
    if (identity && drop_privileges(*identity, error) != 0) {
        std::fprintf(stderr, "weft: %s\n", error.c_str());
        return 1;
    }
    describe(*built, loops.listening_on());
    std::printf("weft %s: %zu loop%s; SIGTERM or Ctrl-C stops\n", WEFT_VERSION, loops.size(),
                loops.size() == 1 ? "" : "s");
    std::fflush(stdout);
    // Every loop listens (the sockets are open and registered; a connection
    // made now waits in the backlog until a loop accepts it).
    systemd::notify("READY=1\nSTATUS=" + status_line(loops));
    // A later SIGHUP reload sends systemd::reloading_state() before it
    // starts and READY=1 when it is done.
    loops.on_stopping([] { systemd::notify("STOPPING=1\nSTATUS=draining"); });
    if (const auto interval = systemd::watchdog_interval())
        loops.on_heartbeat(*interval, [] { systemd::notify("WATCHDOG=1"); });
    loops.run();
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    // Started with fd 0, 1 or 2 closed, the first files opened would take
    // those numbers, and the error log's dup2 onto 2 would replace one.
    for (int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC); fd >= 0;
         fd = ::open("/dev/null", O_RDWR | O_CLOEXEC)) {
        if (fd > 2) {
            ::close(fd);
            break;
        }
        ::fcntl(fd, F_SETFD, 0); // a std stream stays open across exec
    }
    std::string error;
    const auto line = parse_command_line({argv + 1, argv + argc}, error);
    if (!line) {
        std::fprintf(stderr, "weft: %s\n%s", error.c_str(), kUsage);
        return 2;
    }
    if (line->action == CommandLine::Action::help) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    if (line->action == CommandLine::Action::version) {
        std::printf("weft %s\n", WEFT_VERSION);
        return 0;
    }

    std::optional<config::Config> config;
    const std::string source = line->config_file.empty() ? "the command line" : line->config_file;
    if (line->config_file.empty()) {
        bool usage = false;
        config = config_without_file(*line, error, usage);
        if (!config) {
            std::fprintf(stderr, "weft: %s\n", error.c_str());
            return usage ? 2 : 1;
        }
    } else {
        config::ConfigError config_error;
        config = config::load_file(line->config_file, config::process_environment(), config_error);
        if (!config) {
            std::fprintf(stderr, "weft: %s\n", config_error.text().c_str());
            return 1;
        }
    }
    if (line->action == CommandLine::Action::check) {
        // Built as a run would build them (but for their roots: the
        // configuration is checked, not this machine's disk).
        resolve_identity(*config, error);
        std::unique_ptr<BuiltServer> built =
            error.empty() ? build_server(*config, error, Build::checking) : nullptr;
        if (!built) {
            std::fprintf(stderr, "weft: %s\n", error.c_str());
            return 1;
        }
        describe(*built, config->listeners);
        std::printf("weft: %s is fine\n", source.c_str());
        return 0;
    }
    return serve(*config);
}
