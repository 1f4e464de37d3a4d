#pragma once
// Where a request's path lies on disk for the files and fastcgi handlers:
// beneath the root, the whole path; with `alias`, the part after the route's
// prefix beneath the alias directory (`files /static { alias = /srv/assets }`
// serves /static/a.css from /srv/assets/a.css), or for an exact route the
// aliased file itself. Everything that looks at the URL (deny, hidden
// segments, a directory's redirect, SCRIPT_NAME) keeps the URL path; only
// the disk sees the mapped one.
//
// Routes match on segment boundaries, so nginx's alias trap (`location /i
// { alias /data/w/; }` serving /i../secret from /data/w/../secret) has no
// counterpart: /static../x never reaches /static's handler, and a path is
// normalised (no "..") before it is routed.

#include "config/config.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace weft::handlers {

class PathMap {
public:
    // `root` is used when `alias` is empty. A trailing '/' on an exact
    // route's alias names a directory (the route's path then stands for
    // it, as a prefix's does).
    PathMap(const config::Route& route, std::string_view root, std::string_view alias);

    // The directory files are opened beneath: the root as given, or the
    // alias's directory without a trailing '/'.
    const std::string& directory() const { return directory_; }
    bool aliased() const { return aliased_; }
    // What the files come from, for people: the directory, or an aliased file.
    std::string source() const {
        return file_.empty() ? directory_ : (directory_ == "/" ? file_ : directory_ + file_);
    }

    // The path beneath directory() that the normalised URL path `url`
    // names (a leading '/'; the URL path itself without an alias), "" for
    // the alias directory asked without its trailing '/', nullopt for a
    // path that names nothing there (not beneath the route, or beneath an
    // aliased file).
    std::optional<std::string_view> local(std::string_view url) const {
        if (!aliased_) return url;
        return aliased_local(url);
    }

private:
    std::optional<std::string_view> aliased_local(std::string_view url) const;

    std::string directory_;
    bool aliased_ = false;
    std::string route_;     // the route's path: an aliased file's, or the prefix
    std::size_t strip_ = 0; // bytes of the URL path the alias directory stands for
    std::string file_;      // "/name" of an aliased file; "" for a directory
};

} // namespace weft::handlers
