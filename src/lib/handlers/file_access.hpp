#pragma once
// Which request paths a files handler refuses before touching the disk.

#include <string>
#include <string_view>

namespace weft::handlers {

// Whether a segment of the normalised path starts with '.': .git/, .env,
// .htaccess, and any file an editor or a deploy tool hid.
bool has_dot_segment(std::string_view path);

// Whether `path` is `prefix` or lies beneath it, segment-wise: /private
// covers /private and /private/x, not /privateer. `prefix` is normalised
// (leading '/', no trailing one except for "/" itself).
bool is_beneath(std::string_view path, std::string_view prefix);

// A configured `deny` prefix as is_beneath() wants it: a leading '/', no
// trailing one.
std::string normalised_prefix(std::string prefix);

} // namespace weft::handlers
