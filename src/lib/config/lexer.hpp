#pragma once
// The configuration's lines, as statements:
//
//   # a comment                     (also after a statement, after a space)
//   key = value                     value: the rest of the line, or "quoted"
//   word key = value                a qualified key (`add Link = ...`)
//   section [argument ...] {        opens a block; `}` alone closes it
//   }
//   directive value                 e.g. `include path`, `listener *:8080`
//
// Values may use ${VAR} and ${VAR:-default}; a quoted value takes the
// escapes \" \\ \n \t and \$ (a literal $). The lexer checks that braces
// match; which keys and sections exist is the schema's business.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::config {

struct Statement {
    enum class Kind { assign, open, close, directive };
    Kind kind;
    std::string key;       // assign: the key; open: the section; directive: its name
    std::string qualifier; // assign: the word before the key, if any
    std::string argument;  // open: what follows the section name, if anything
    std::string value;     // assign, directive: the value, expanded
    int line = 0;
    int key_column = 0;   // where the key (or section, or `}`) starts
    int value_column = 0; // where the value (argument, path) starts
};

struct LexError {
    int line = 0;
    int column = 0;
    std::string message;
};

// Looks a variable up for ${...}: the process environment unless given.
using Environment = std::function<std::optional<std::string>(std::string_view name)>;
Environment process_environment();

// The statements of `text`, or the first error.
bool lex(std::string_view text, const Environment& environment, std::vector<Statement>& out,
         LexError& error);

} // namespace weft::config
