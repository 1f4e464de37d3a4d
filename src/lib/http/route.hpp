#pragma once
// Where a handler serves within its site: a prefix (a path and everything
// below it), one exact path, or a path pattern (a glob over the whole path or
// a name pattern over its last segment; see path_pattern.hpp). The router
// tries a site's exact routes first, then its patterns in the order written,
// then the longest prefix.

#include "util/path_pattern.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft::http {

struct Route {
    enum class Kind : std::uint8_t { prefix, exact, pattern };
    Kind kind = Kind::prefix;
    std::string path;                   // as written
    std::optional<PathPattern> pattern; // for Kind::pattern

    static Route prefix(std::string path) { return {Kind::prefix, std::move(path), {}}; }
    static Route exact(std::string path) { return {Kind::exact, std::move(path), {}}; }
    // A text without wildcards that starts with '/' is a prefix route;
    // nullopt with a message for a bad pattern.
    static std::optional<Route> from_pattern(std::string_view text, std::string& error);

    // As it is written in a configuration: "/static", "exact /", "/w/*.php".
    std::string text() const { return kind == Kind::exact ? "exact " + path : path; }
};

} // namespace weft::http
