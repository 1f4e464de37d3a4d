// weft: the command line. It loads and checks the configuration, then runs
// the Service it describes until SIGTERM or SIGINT.

#include "backend_choice.hpp"
#include "build_server.hpp"
#include "command_line.hpp"
#include "config/parser.hpp"
#include "privilege.hpp"
#include "service.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace weft;

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
        const BackendChoice backend = choose_backend(*config);
        if (!backend.ignored.empty())
            std::fprintf(stderr, "weft: WEFT_IO_BACKEND=%s is ignored (it may be epoll or uring)\n",
                         backend.ignored.c_str());
        std::printf("weft: %s\n", describe_backend(backend).c_str());
        std::printf("weft: %s is fine\n", source.c_str());
        return 0;
    }
    // Blocked before any thread exists, so that only the LoopGroup's signalfd
    // ever takes them (loop_group.hpp).
    sigset_t signals;
    sigemptyset(&signals);
    for (int signo : {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1}) sigaddset(&signals, signo);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    // A reload re-reads the file by the path it had at start.
    std::string config_file;
    if (!line->config_file.empty()) {
        char* absolute = ::realpath(line->config_file.c_str(), nullptr);
        config_file = absolute ? absolute : line->config_file;
        std::free(absolute);
    }
    Service service(std::move(*config), std::move(config_file));
    return service.run();
}
