#pragma once
// Which request paths a handler refuses before touching the disk.

#include <cstddef>
#include <string>
#include <string_view>

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

// Whether `path` is `prefix` or lies beneath it, segment-wise: /private
// covers /private and /private/x, not /privateer. `prefix` is normalised
// (leading '/', no trailing one except for "/" itself).
bool is_beneath(std::string_view path, std::string_view prefix);

// A configured `deny` prefix as is_beneath() wants it: a leading '/', no
// trailing one.
std::string normalised_prefix(std::string prefix);

} // namespace weft::handlers
