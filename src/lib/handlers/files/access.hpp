#pragma once
// Which request paths a handler refuses before touching the disk.

#include "util/ascii.hpp"
#include "util/path_pattern.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
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

// Up to 8 bytes of `text` lower-cased into one number, the first byte
// highest; 0 for longer text (and for ""). Names hold no NUL, so the number
// tells the length too, and a name compares with a list of names in one
// switch: a call to equals_ignoring_case per name cost is_never_served 400
// instructions a request for x.bin against the 14 leftovers (callgrind).
constexpr std::uint64_t packed_lower(std::string_view text) {
    if (text.size() > 8) return 0;
    std::uint64_t word = 0;
    for (const char c : text) word = word << 8 | static_cast<unsigned char>(ascii::to_lower(c));
    return word;
}

// `name` without a precompressed twin's suffix (.gz, .br, .zst, any case):
// x.json.gz is x.json. Inline, with the '.' looked at first: it runs for
// every file served from the disk (a loop over the three suffixes cost 50
// instructions a request on file1k).
inline std::string_view without_twin_suffix(std::string_view name) {
    const std::size_t n = name.size();
    if (n > 3 && name[n - 3] == '.') {
        const std::uint64_t suffix = packed_lower(name.substr(n - 2));
        if (suffix == packed_lower("gz") || suffix == packed_lower("br"))
            return name.substr(0, n - 3);
    }
    if (n > 4 && name[n - 4] == '.' && packed_lower(name.substr(n - 3)) == packed_lower("zst"))
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
