#include "http/route.hpp"

#include <utility>

namespace weft::http {

std::optional<Route> Route::from_pattern(std::string_view text, std::string& error) {
    std::optional<PathPattern> pattern = PathPattern::compile(text, error);
    if (!pattern) return std::nullopt;
    if (pattern->form() == PathPattern::Form::prefix) return prefix(std::string(pattern->prefix()));
    return Route{Kind::pattern, std::string(text), std::move(pattern)};
}

} // namespace weft::http
