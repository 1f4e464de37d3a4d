#pragma once
// Which request paths a handler refuses before touching the disk.

#include "util/ascii.hpp"
#include "util/path_pattern.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace weft::handlers {

// Where the first segment of the normalised path that starts with '.' ends
// (.git/, .env, .htaccess, any file an editor or a deploy tool hid), or npos.
// A leading /.well-known (RFC 8615: ACME's HTTP-01 challenges, security.txt)
// is no such segment; a dot segment beneath it is.
std::size_t dot_segment_end(std::string_view path);
inline bool has_dot_segment(std::string_view path) {
    return dot_segment_end(path) != std::string_view::npos;
}

// Whether the file a path names must never be sent as it is on disk: a
// script's source in any guise (.php and its kin anywhere after the first
// dot: .php5, .phtml, .phar, x.php.old, x.php.txt, x.php.), an editor's
// backup or a leftover of a merge, a deploy or an upload (x~, #x#, .bak,
// .orig, .save, .swp, .swo, .rej, .old, .tmp, .temp, .dist, .backup, .bk,
// .copy) or a PHP include (.inc), and a precompressed twin of any of them
// (x.php.gz). Such files sit next to the scripts and hold the same secrets.
bool is_never_served(std::string_view name);

// A prefix with a leading '/' and no trailing one.
std::string normalised_prefix(std::string prefix);

// A handler's `deny` or `scripts`: path patterns (util/path_pattern.hpp),
// compiled at create().
using PathPatterns = std::vector<PathPattern>;

// `texts` compiled; false with a reason for a bad one (the parser has
// checked them: only a caller that skipped it sees one). For `deny`, a
// prefix covers its directory with or without a trailing '/' (/private/
// denies /private too), as a deny prefix always has.
bool compile_patterns(const std::vector<std::string>& texts, bool deny, PathPatterns& out,
                      std::string& error);

inline bool any_matches(const PathPatterns& patterns, std::string_view path) {
    for (const PathPattern& pattern : patterns)
        if (pattern.matches(path)) return true;
    return false;
}

// The first 8 bytes of `text` (fewer: the rest zero) lower-cased into one
// word, the first byte lowest. Names hold no NUL, so names of up to 8 bytes
// have distinct words, a name's start is its word's low bytes, and a name
// compares with a list of names in one switch: a call to
// equals_ignoring_case per name cost is_never_served 400 instructions a
// request for x.bin against the 14 leftovers (callgrind). At run time a
// word at once, from loads inside the text (a loop over its bytes cost 12
// instructions a byte).
constexpr std::uint64_t lower_word(std::string_view text) {
    const std::size_t n = text.size() < 8 ? text.size() : 8;
    if (std::is_constant_evaluated()) {
        std::uint64_t word = 0;
        for (std::size_t i = 0; i < n; ++i)
            word |= std::uint64_t{static_cast<unsigned char>(ascii::to_lower(text[i]))} << (8 * i);
        return word;
    }
    const auto load = [p = text.data()]<class Word>(Word, std::size_t at) {
        Word word;
        std::memcpy(&word, p + at, sizeof word);
        return std::uint64_t{word};
    };
    // Two loads that overlap, the second shifted so that each byte is taken
    // once: the bytes past n stay zero.
    std::uint64_t word = 0;
    if (n == 8)
        word = load(std::uint64_t{}, 0);
    else if (n >= 4)
        word = load(std::uint32_t{}, 0) | load(std::uint32_t{}, n - 4) >> (8 * (8 - n)) << 32;
    else if (n >= 2)
        word = load(std::uint16_t{}, 0) | load(std::uint16_t{}, n - 2) >> (8 * (4 - n)) << 16;
    else if (n == 1)
        word = static_cast<unsigned char>(text[0]);
    // Each byte of 'A' to 'Z' gets bit 5: its low 7 bits plus 0x3f reach
    // 0x80 from 'A' on, plus 0x25 from past 'Z' on (no carry leaves a byte),
    // and a byte with its top bit set is no letter.
    constexpr std::uint64_t kBytes = 0x0101010101010101u;
    constexpr std::uint64_t kTop = 0x80 * kBytes;
    const std::uint64_t low7 = word & ~kTop;
    const std::uint64_t upper = (low7 + 0x3f * kBytes) & ~(low7 + 0x25 * kBytes) & ~word & kTop;
    return word | upper >> 2;
}

// The word of a name to compare with (at most 8 bytes), made when compiled:
// g++ -O2 ran lower_word() over each literal at every call (callgrind).
consteval std::uint64_t word_of(std::string_view name) {
    if (name.size() > 8) throw "a name of more than 8 bytes has no word of its own";
    return lower_word(name);
}

// `name` without a precompressed twin's suffix (.gz, .br, .zst, any case):
// x.json.gz is x.json. Inline, with the '.' looked at first: it runs for
// every file served from the disk (a loop over the three suffixes cost 50
// instructions a request on file1k).
inline std::string_view without_twin_suffix(std::string_view name) {
    const std::size_t n = name.size();
    if (n > 3 && name[n - 3] == '.') {
        const std::uint64_t suffix = lower_word(name.substr(n - 2));
        if (suffix == word_of("gz") || suffix == word_of("br")) return name.substr(0, n - 3);
    }
    if (n > 4 && name[n - 4] == '.' && lower_word(name.substr(n - 3)) == word_of("zst"))
        return name.substr(0, n - 4);
    return name;
}

// Whether `deny` refuses the file a URL path names. A name pattern refuses
// a path any segment of which it names, not only the last: a directory it
// names is denied with all beneath it (`deny = vendor` denies
// /vendor/autoload.php, as .gitignore reads a name, and as the bare word
// denied the prefix /vendor before deny took patterns). A precompressed twin
// asked by its own name (/composer.json.gz) is the file it compresses,
// whose bytes it holds.
bool is_denied(const PathPatterns& deny, std::string_view path);

} // namespace weft::handlers
