#include "handlers/files/path_map.hpp"

#include "util/path_pattern.hpp"

namespace weft::handlers {

namespace {

std::string without_trailing_slashes(std::string_view path) {
    while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
    return std::string(path);
}

} // namespace

PathMap::PathMap(const config::Route& route, std::string_view root, std::string_view alias) {
    if (alias.empty()) {
        directory_ = root;
        return;
    }
    aliased_ = true;
    route_ = route.path;
    if (route.kind == config::Route::Kind::exact && !alias.ends_with('/')) {
        const std::size_t slash = alias.rfind('/');
        directory_ = slash == 0 ? std::string("/") : std::string(alias.substr(0, slash));
        file_ = alias.substr(slash);
        return;
    }
    directory_ = without_trailing_slashes(alias);
    // The prefix's own trailing '/' stays in the mapped path: /static/ and
    // /static both make /static/a.css /a.css.
    strip_ = route_.size() - (route_.ends_with('/') ? 1 : 0);
}

std::optional<std::string_view> PathMap::aliased_local(std::string_view url) const {
    if (!file_.empty()) {
        if (url == route_) return std::string_view(file_);
        return std::nullopt;
    }
    if (!prefix_matches(route_, url)) return std::nullopt;
    return url.substr(strip_);
}

} // namespace weft::handlers
