#pragma once
// Request paths as handlers see them: percent-decoded once and normalised, so
// a prefix match or a file lookup cannot be fooled by encodings or dot
// segments.

#include <optional>
#include <string>
#include <string_view>

namespace weft::http {

// Decodes every %XX in `raw` (a target's path, before any '?') once, into
// `out` (which must hold raw.size() bytes), then normalises it: empty and "."
// segments go, ".." removes the segment before it, repeated slashes become
// one, a trailing slash stays. The result starts with '/'. It is a view of
// `raw` itself when that is already normal (no '%', no empty or dot segment:
// most paths, and nothing is copied), else of `out`.
// nullopt (answered 400) when raw does not start with '/', a %XX is not two
// hex digits, the path holds a NUL (raw or encoded), or ".." would climb above
// the root.
std::optional<std::string_view> normalize_path(std::string_view raw, char* out);

// The other way: appends `text` percent-encoded for a URL path, all but
// unreserved characters (and '/' when `keep_slashes`), so a name can be
// neither read as a scheme ("a:b") nor break out of an attribute or a field.
void append_percent_encoded(std::string& out, std::string_view text, bool keep_slashes);

} // namespace weft::http
