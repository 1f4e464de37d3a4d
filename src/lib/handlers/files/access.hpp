#pragma once
// Which request paths a handler refuses before touching the disk.

#include "util/ascii.hpp"
#include "util/path_pattern.hpp"

#include <cstddef>
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

// `name` without a precompressed twin's suffix (.gz, .br, .zst, any case):
// x.json.gz is x.json. Inline, with the '.' looked at first: it runs for
// every file served (a loop over the three suffixes cost 50 instructions a
// request on file1k).
inline std::string_view without_twin_suffix(std::string_view name) {
    const std::size_t n = name.size();
    const auto is = [&](std::size_t from, std::string_view suffix) {
        return ascii::equals_ignoring_case(name.substr(from), suffix);
    };
    if (n > 3 && name[n - 3] == '.' && (is(n - 3, ".gz") || is(n - 3, ".br")))
        return name.substr(0, n - 3);
    if (n > 4 && name[n - 4] == '.' && is(n - 4, ".zst")) return name.substr(0, n - 4);
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
