// libFuzzer target for path patterns. The input is a pattern, a newline, then
// a path. compile() must accept exactly the texts a plain reading here
// accepts (or refuse one as too long), and matches() must answer as a slow,
// obviously right matcher: the pattern's groups expanded into every
// alternative, each tried by the definition of its wildcards, memoised.

#include "util/path_pattern.hpp"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using weft::PathPattern;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

// dirs: `**/` right after a '/' (none or any number of directories).
enum class Token : std::uint8_t { letter, one, star, globstar, dirs };
struct Piece {
    Token token;
    char letter;
};
using Sequence = std::vector<Piece>;

struct Reading {
    bool valid = true;
    bool wildcard = false;
    bool too_many = false;                        // expansions to try
    std::vector<Sequence> expansions{Sequence{}}; // every way the groups can go
};

constexpr std::size_t max_expansions = 512;

// The pattern as its definition reads it.
Reading read(std::string_view text) {
    Reading reading;
    const bool name = !text.starts_with('/');
    if (text.empty()) reading.valid = false;
    bool in_group = false;
    bool after_slash = false;           // the last item read was a '/'
    std::vector<Sequence> alternatives; // of the open group
    auto add = [&](Piece piece) {
        after_slash = piece.token == Token::letter && piece.letter == '/';
        if (piece.token == Token::letter && piece.letter == '/' && name) reading.valid = false;
        if (piece.token != Token::letter) reading.wildcard = true;
        if (in_group)
            alternatives.back().push_back(piece);
        else
            for (Sequence& sequence : reading.expansions) sequence.push_back(piece);
    };
    for (std::size_t i = 0; i < text.size() && reading.valid; ++i) {
        const char c = text[i];
        if (c == '\\') {
            if (i + 1 == text.size())
                reading.valid = false;
            else
                add({Token::letter, text[++i]});
        } else if (c == '*' && i + 1 < text.size() && text[i + 1] == '*') {
            ++i;
            // A '/' next, plain or escaped, makes it `**/`.
            const std::size_t slash =
                i + 1 < text.size() && text[i + 1] == '/'                          ? 1
                : i + 2 < text.size() && text[i + 1] == '\\' && text[i + 2] == '/' ? 2
                                                                                   : 0;
            if (after_slash && slash) {
                add({Token::dirs, 0});
                i += slash;
            } else {
                add({Token::globstar, 0});
            }
        } else if (c == '*') {
            add({Token::star, 0});
        } else if (c == '?') {
            add({Token::one, 0});
        } else if (c == '{') {
            after_slash = false;
            if (in_group) reading.valid = false;
            in_group = true;
            reading.wildcard = true;
            alternatives.assign(1, {});
        } else if (c == ',' && in_group) {
            after_slash = false;
            alternatives.emplace_back();
        } else if (c == '}' && in_group) {
            after_slash = false;
            in_group = false;
            std::vector<Sequence> expanded;
            for (const Sequence& before : reading.expansions)
                for (const Sequence& alternative : alternatives) {
                    expanded.push_back(before);
                    expanded.back().insert(expanded.back().end(), alternative.begin(),
                                           alternative.end());
                }
            reading.expansions = std::move(expanded);
            if (reading.expansions.size() > max_expansions) {
                reading.too_many = true;
                return reading;
            }
        } else {
            add({Token::letter, c});
        }
    }
    if (in_group) reading.valid = false;
    return reading;
}

// Whether sequence[i..] matches subject[j..], memoised in `known` (0 unknown,
// 1 no, 2 yes).
bool match(const Sequence& sequence, std::size_t i, std::string_view subject, std::size_t j,
           std::vector<std::uint8_t>& known) {
    std::uint8_t& memo = known[i * (subject.size() + 1) + j];
    if (memo != 0) return memo == 2;
    bool result = false;
    if (i == sequence.size()) {
        result = j == subject.size();
    } else {
        const Piece piece = sequence[i];
        switch (piece.token) {
        case Token::letter:
            result = j < subject.size() && subject[j] == piece.letter &&
                     match(sequence, i + 1, subject, j + 1, known);
            break;
        case Token::one:
            result = j < subject.size() && subject[j] != '/' &&
                     match(sequence, i + 1, subject, j + 1, known);
            break;
        case Token::dirs:
            // Nothing, or a run that ends with '/'.
            result = match(sequence, i + 1, subject, j, known);
            for (std::size_t k = j + 1; !result && k <= subject.size(); ++k)
                result = subject[k - 1] == '/' && match(sequence, i + 1, subject, k, known);
            break;
        case Token::star:
        case Token::globstar:
            for (std::size_t k = j;; ++k) {
                if (match(sequence, i + 1, subject, k, known)) {
                    result = true;
                    break;
                }
                if (k == subject.size()) break;
                if (piece.token == Token::star && subject[k] == '/') break;
            }
            break;
        }
    }
    memo = result ? 2 : 1;
    return result;
}

bool reference_matches(std::string_view text, const Reading& reading, std::string_view path) {
    if (!text.starts_with('/')) {
        path = path.substr(path.rfind('/') + 1);
    } else if (!reading.wildcard) {
        std::string prefix;
        for (const Piece& piece : reading.expansions.front()) prefix += piece.letter;
        if (path == prefix) return true;
        if (prefix.ends_with('/')) return path.starts_with(prefix);
        return path.starts_with(prefix + "/");
    }
    for (const Sequence& sequence : reading.expansions) {
        std::vector<std::uint8_t> known((sequence.size() + 1) * (path.size() + 1), 0);
        if (match(sequence, 0, path, 0, known)) return true;
    }
    return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::size_t newline = input.find('\n');
    const std::string_view text = input.substr(0, newline);
    const std::string_view path =
        newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

    std::string error;
    std::size_t offset = 0;
    const std::optional<PathPattern> pattern = PathPattern::compile(text, error, offset);
    check(pattern.has_value() == error.empty());
    if (!pattern) check(offset <= text.size());
    if (text.size() > 256 || path.size() > 512) return 0;

    const Reading reading = read(text);
    if (reading.too_many) return 0;
    if (!reading.valid) {
        check(!pattern);
        return 0;
    }
    if (!pattern) {
        check(error.starts_with("too long"));
        return 0;
    }
    check(pattern->text() == text);
    check(pattern->form() == (!text.starts_with('/') ? PathPattern::Form::name
                              : reading.wildcard     ? PathPattern::Form::glob
                                                     : PathPattern::Form::prefix));
    check(pattern->matches(path) == reference_matches(text, reading, path));
    return 0;
}
