// weft: the command line. It loads and checks the configuration; serving
// comes with the HTTP issue, so for now it prints what it would serve.

#include "command_line.hpp"
#include "config/parser.hpp"

#include <cstdio>
#include <string>
#include <variant>
#include <vector>

namespace {

using namespace weft;

// One line per listener and handler: what this configuration serves.
void describe(const config::Config& c) {
    for (const Address& a : c.listeners) {
        const std::string url =
            a.kind() == Address::Kind::unix_path ? a.to_string() : "http://" + a.to_string() + "/";
        std::printf("weft: listening on %s\n", url.c_str());
    }
    for (const config::Site& site : c.sites) {
        for (const config::Handler& h : site.handlers) {
            std::visit(
                [&](const auto& handler) {
                    using T = std::decay_t<decltype(handler)>;
                    if constexpr (std::is_same_v<T, config::FilesHandler>) {
                        std::printf("weft:   %s  files from %s\n", handler.prefix.c_str(),
                                    (handler.root.empty() ? site.root : handler.root).c_str());
                    } else if constexpr (std::is_same_v<T, config::FastcgiHandler>) {
                        std::printf("weft:   %s  PHP from %s via %s\n", handler.prefix.c_str(),
                                    (handler.root.empty() ? site.root : handler.root).c_str(),
                                    handler.upstream.empty()
                                        ? handler.pass.front().to_string().c_str()
                                        : ("upstream " + handler.upstream).c_str());
                    } else if constexpr (std::is_same_v<T, config::RedirectHandler>) {
                        std::printf("weft:   %s  redirect %d to %s\n", handler.prefix.c_str(),
                                    handler.status, handler.to.c_str());
                    } else {
                        std::printf("weft:   %s  response %d\n", handler.prefix.c_str(),
                                    handler.status);
                    }
                },
                h);
        }
    }
}

} // namespace

int main(int argc, char** argv) {
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
        std::printf("weft: %s is fine\n", source.c_str());
        return 0;
    }
    describe(*config);
    std::printf("weft %s: serving arrives with the HTTP layer; this build stops here\n",
                WEFT_VERSION);
    return 0;
}
