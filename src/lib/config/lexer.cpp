#include "config/lexer.hpp"

#include "util/ascii.hpp"

#include <cstdlib>

namespace weft::config {

namespace {

// A CR counts as a space: a file written with CRLF line ends reads alike.
bool is_space(char c) {
    return ascii::is_whitespace(c) || c == '\r';
}
bool starts_key(char c) {
    return ascii::is_alpha(c) || c == '_';
}
// '-' for header names (`headers { X-Frame-Options = DENY }`).
bool in_key(char c) {
    return starts_key(c) || ascii::is_digit(c) || c == '-';
}

// One line being read, with its number; columns count from 1.
class Line {
public:
    Line(std::string_view text, int number, LexError& error)
        : text_(text), number_(number), error_(error) {}

    int column() const { return static_cast<int>(at_) + 1; }
    bool done() const { return at_ >= text_.size(); }
    char peek() const { return done() ? '\0' : text_[at_]; }
    void skip_spaces() {
        while (!done() && is_space(text_[at_])) ++at_;
    }
    // At the end, or at a comment: nothing more that counts.
    bool at_end() {
        skip_spaces();
        return done() || text_[at_] == '#';
    }
    std::string_view key() {
        const std::size_t start = at_;
        while (!done() && in_key(text_[at_])) ++at_;
        return text_.substr(start, at_ - start);
    }
    // The rest up to a comment (a # at the start or after a space), trimmed.
    std::string_view rest() {
        skip_spaces();
        const std::size_t start = at_;
        std::size_t end = start;
        for (; at_ < text_.size(); ++at_) {
            if (text_[at_] == '#' && (at_ == start || is_space(text_[at_ - 1]))) break;
            if (!is_space(text_[at_])) end = at_ + 1;
        }
        return text_.substr(start, end - start);
    }
    void advance() { ++at_; }
    std::size_t position() const { return at_; }
    void rewind(std::size_t position) { at_ = position; }

    bool fail(int column, std::string message) {
        error_ = {number_, column, std::move(message)};
        return false;
    }

private:
    std::string_view text_;
    std::size_t at_ = 0;
    int number_;
    LexError& error_;
};

// Appends `text` to `out` with ${VAR} and ${VAR:-default} expanded;
// `column` is where `text` starts.
bool expand(std::string_view text, int column, const Environment& environment, Line& line,
            std::string& out) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '$' || i + 1 >= text.size() || text[i + 1] != '{') {
            out += text[i];
            continue;
        }
        const std::size_t close = text.find('}', i + 2);
        const int at = column + static_cast<int>(i);
        if (close == std::string_view::npos)
            return line.fail(at, "unclosed ${: write ${NAME} or ${NAME:-default}");
        const std::string_view inside = text.substr(i + 2, close - i - 2);
        const std::size_t dash = inside.find(":-");
        const std::string_view name = inside.substr(0, dash);
        bool valid = !name.empty() && starts_key(name[0]);
        for (char c : name) valid = valid && in_key(c);
        if (!valid)
            return line.fail(at, "bad variable name '" + std::string(name) +
                                     "' in ${...}: letters, digits and _");
        if (auto value = environment(name)) {
            out += *value;
        } else if (dash != std::string_view::npos) {
            out += inside.substr(dash + 2);
        } else {
            return line.fail(at, "environment variable " + std::string(name) +
                                     " is not set (write ${" + std::string(name) +
                                     ":-default} to give a default)");
        }
        i = close;
    }
    return true;
}

// A "quoted value": escapes, then ${...} outside \$.
bool quoted(Line& line, const Environment& environment, std::string& out) {
    const int open = line.column();
    line.advance();  // the opening quote
    std::string raw; // with \$ kept as a marker
    std::vector<bool> literal_dollar;
    for (;;) {
        if (line.done()) return line.fail(open, "unclosed quote: a value ends with '\"'");
        const char c = line.peek();
        line.advance();
        if (c == '"') break;
        if (c != '\\') {
            raw += c;
            literal_dollar.push_back(false);
            continue;
        }
        const int escape = line.column() - 1;
        const char e = line.peek();
        line.advance();
        switch (e) {
        case '"':
            raw += '"';
            break;
        case '\\':
            raw += '\\';
            break;
        case 'n':
            raw += '\n';
            break;
        case 't':
            raw += '\t';
            break;
        case '$':
            raw += '$';
            break;
        default:
            return line.fail(escape, std::string("unknown escape '\\") + (e ? e : ' ') +
                                         "': use \\\" \\\\ \\n \\t or \\$");
        }
        literal_dollar.push_back(e == '$');
    }
    if (!line.at_end()) return line.fail(line.column(), "unexpected text after the closing quote");
    // Expand ${...} except where the $ was escaped.
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '$' && !literal_dollar[i] && i + 1 < raw.size() && raw[i + 1] == '{') {
            const std::size_t close = raw.find('}', i);
            const std::size_t end = close == std::string::npos ? raw.size() : close + 1;
            if (!expand(std::string_view(raw).substr(i, end - i), open + 1 + static_cast<int>(i),
                        environment, line, out))
                return false;
            i = end - 1;
        } else {
            out += raw[i];
        }
    }
    return true;
}

} // namespace

Environment process_environment() {
    return [](std::string_view name) -> std::optional<std::string> {
        const char* value = std::getenv(std::string(name).c_str());
        if (!value) return std::nullopt;
        return std::string(value);
    };
}

bool lex(std::string_view text, const Environment& environment, std::vector<Statement>& out,
         LexError& error) {
    std::vector<std::size_t> open_index;
    int number = 0;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t newline = text.find('\n', start);
        const std::size_t end = newline == std::string_view::npos ? text.size() : newline;
        Line line(text.substr(start, end - start), ++number, error);
        start = end + 1;
        if (line.at_end()) {
            if (newline == std::string_view::npos) break;
            continue;
        }
        Statement s;
        s.line = number;
        s.key_column = line.column();
        if (line.peek() == '}') {
            line.advance();
            if (!line.at_end()) return line.fail(line.column(), "'}' stands alone on its line");
            if (open_index.empty()) return line.fail(s.key_column, "'}' without an open section");
            open_index.pop_back();
            s.kind = Statement::Kind::close;
            out.push_back(std::move(s));
            if (newline == std::string_view::npos) break;
            continue;
        }
        if (!starts_key(line.peek()))
            return line.fail(s.key_column,
                             std::string("expected a key or a section, not '") + line.peek() + "'");
        s.key = std::string(line.key());
        line.skip_spaces();
        if (starts_key(line.peek())) {
            // `add Name = value`: a word before the key.
            const std::size_t mark = line.position();
            const int column = line.column();
            const std::string_view key = line.key();
            line.skip_spaces();
            if (line.peek() == '=') {
                s.qualifier = std::move(s.key);
                s.key = std::string(key);
                s.key_column = column;
            } else {
                line.rewind(mark);
            }
        }
        if (line.peek() == '=') {
            line.advance();
            line.skip_spaces();
            s.kind = Statement::Kind::assign;
            s.value_column = line.column();
            if (line.peek() == '"') {
                if (!quoted(line, environment, s.value)) return false;
            } else if (!expand(line.rest(), s.value_column, environment, line, s.value)) {
                return false;
            }
        } else {
            s.value_column = line.column();
            const std::string_view rest = line.rest();
            if (rest.empty() || rest.back() != '{') {
                // A directive: `include path`, `listener *:8080`.
                s.kind = Statement::Kind::directive;
                if (!expand(rest, s.value_column, environment, line, s.value)) return false;
            } else {
                // A section: name, optional argument words, then '{' ending the line.
                std::string_view argument = rest.substr(0, rest.size() - 1);
                while (!argument.empty() && is_space(argument.back())) argument.remove_suffix(1);
                if (!expand(argument, s.value_column, environment, line, s.argument)) return false;
                s.kind = Statement::Kind::open;
                open_index.push_back(out.size());
            }
        }
        out.push_back(std::move(s));
        if (newline == std::string_view::npos) break;
    }
    if (!open_index.empty()) {
        const Statement& unclosed = out[open_index.back()];
        error = {unclosed.line, unclosed.key_column,
                 "section '" + unclosed.key + "' is not closed: a '}' is missing"};
        return false;
    }
    return true;
}

} // namespace weft::config
