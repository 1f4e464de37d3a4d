// libFuzzer target for the configuration language: the line lexer, each
// value through the typed value parsers, then the whole loader (schema
// included). Anything goes in; nothing may crash, leak or trip a sanitizer,
// and every error must point inside the input. Inputs that include files
// stop after the lexer: the fuzzer reads no files.

#include "config/lexer.hpp"
#include "config/parser.hpp"
#include "config/values.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const weft::config::Environment env = [](std::string_view name) -> std::optional<std::string> {
        if (name == "ROOT") return std::string("/srv/www");
        return std::nullopt;
    };
    std::vector<weft::config::Statement> statements;
    weft::config::LexError error;
    if (!weft::config::lex(text, env, statements, error)) {
        const long lines = 1 + static_cast<long>(std::count(text.begin(), text.end(), '\n'));
        if (error.line < 1 || error.line > lines || error.column < 1 || error.message.empty())
            std::abort();
        return 0;
    }
    std::string message;
    for (const auto& s : statements) {
        weft::config::parse_duration(s.value, message);
        weft::config::parse_size(s.value, message);
        weft::config::parse_bool(s.value, message);
        weft::config::split_list(s.value);
    }
    if (text.find("include") != std::string_view::npos) return 0; // no files from here
    weft::config::ConfigError config_error;
    if (!weft::config::load_text(text, "fuzz.conf", env, config_error) &&
        (config_error.message.empty() || config_error.line < 1))
        std::abort();
    return 0;
}
