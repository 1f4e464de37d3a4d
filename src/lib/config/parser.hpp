#pragma once
// Loads a configuration: the lexer's statements, includes followed, checked
// against the schema (which keys and sections exist where, of what type),
// into a Config. The first error stops it, as `file:line:column: message`
// naming what was expected (and for a misspelt key, the nearest known one).

#include "config/config.hpp"
#include "config/lexer.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace weft::config {

struct ConfigError {
    std::string file;
    int line = 0;
    int column = 0;
    std::string message;
    // file:line:column: message
    std::string text() const;
};

// `path` and what it includes (paths relative to the including file).
std::optional<Config> load_file(const std::string& path, const Environment& environment,
                                ConfigError& error);
// Text named `name` in errors; its includes are relative to the current directory.
std::optional<Config> load_text(std::string_view text, const std::string& name,
                                const Environment& environment, ConfigError& error);

} // namespace weft::config
