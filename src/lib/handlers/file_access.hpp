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

// Whether the file a path names must never be sent as it is on disk: an
// editor's backup or a leftover of a merge or an upload (x.php~, #x.php#,
// .bak, .orig, .save, .swp, .swo, .rej), or a script's source (.php and its
// kin: .phtml, .php3 to .php8, .phps, .phar), whatever extensions a handler
// runs. Such files sit next to the scripts and hold the same secrets.
bool is_never_served(std::string_view name);

// Whether `path` is `prefix` or lies beneath it, segment-wise: /private
// covers /private and /private/x, not /privateer. `prefix` is normalised
// (leading '/', no trailing one except for "/" itself).
bool is_beneath(std::string_view path, std::string_view prefix);

// A configured `deny` prefix as is_beneath() wants it: a leading '/', no
// trailing one.
std::string normalised_prefix(std::string prefix);

} // namespace weft::handlers
