#pragma once
// weft's command line:
//   weft                                   serve the current directory on 127.0.0.1:8080
//   weft -c FILE                           run a configuration
//   weft -t [-c FILE]                      check it and exit
//   weft --listen ADDR --root DIR [--php ADDR]   serve without a file
//   weft --help | --version
// Exit codes: 0 a clean stop, 1 a configuration or start-up error (one line
// saying why), 2 bad usage.

#include "config/config.hpp"

#include <optional>
#include <string>
#include <vector>

namespace weft {

struct CommandLine {
    enum class Action { run, check, help, version };
    Action action = Action::run;
    std::string config_file; // -c
    std::string listen;      // --listen
    std::string root;        // --root
    std::string php;         // --php
};

// The parsed command line, or nullopt with a one-line reason (exit 2).
std::optional<CommandLine> parse_command_line(const std::vector<std::string>& args,
                                              std::string& error);

// The configuration for a command line without -c: the current directory (or
// --root) on 127.0.0.1:8080 (or --listen), PHP through --php. nullopt with a
// reason: `usage` says whether it is bad usage (2) or a start-up error (1).
std::optional<config::Config> config_without_file(const CommandLine& line, std::string& error,
                                                  bool& usage);

extern const char* const kUsage;

} // namespace weft
