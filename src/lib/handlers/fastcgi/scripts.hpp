#pragma once
// Which script a request path runs, decided by weft before PHP sees anything
// (the `fastcgi` handler).
//
// The path is split after the first segment that names an existing regular
// file with a listed extension: /app.php/user/7 runs /app.php with PATH_INFO
// /user/7. weft checks the file itself, beneath the root, so a path the
// backend would "fix up" (cgi.fix_pathinfo) never reaches it: in
// /uploads/a.jpg/x.php no segment is an existing .php file, so nothing runs,
// and a.jpg is never taken for a script. A path whose last segment has a
// listed extension but names no file is 404, never the front controller.
//
// Otherwise: a directory without its trailing slash is redirected to it; a
// directory with the index script runs that; an existing file (or a
// directory) is served as a static file when `static` is on; anything else
// goes to the `fallback` script when there is one (a front controller), else
// 404. `deny` patterns are 403 before the disk is asked (matched against the
// path, and against the script an index makes of it); a hidden file or
// directory (a segment starting with a dot, /.well-known aside) is 403 when
// it exists, and a route like any other when it does not. With a `scripts`
// allow-list, a script it does not list is 404 (never its source, never the
// fallback), an index script included: nginx's `location ~ \.php$ { return
// 404; }` after the listed entry points.
//
// Paths are URL paths throughout (SCRIPT_NAME is one); only the disk sees
// them mapped beneath the root or the alias (files/path_map.hpp).
//
// What the disk says is cached per loop and handler until something on the
// path changes (path_watch.hpp: the entries it depends on are watched), so a
// request for a script usually costs no syscall here, and a script added,
// removed or replaced is seen by the next request. The last path resolved
// on a loop is kept with its target while the loop's watch has seen no
// change at all (FsWatch::changes()): a client asking for the same path
// again, as a kept connection does, gets the target without the lookups. Each loop opens the root
// itself and follows its path: after a deploy switches a symlinked root the
// next request resolves in the new release.

#include "handlers/files/access.hpp"
#include "handlers/files/open.hpp"
#include "handlers/files/path_map.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weft {
class FsWatch;
}

namespace weft::handlers {

struct LoopScripts; // a resolver's state on one loop (scripts.cpp)

struct ScriptRules {
    std::vector<std::string> extensions; // ".php"
    // Tried in order in a directory, as nginx's `index`: the first that
    // exists wins (a script runs; any other file is served as static).
    std::vector<std::string> index;
    bool static_files = true;
    std::string fallback; // "/index.php", or "" for none
    PathPatterns deny;    // 403
    PathPatterns scripts; // the scripts that may run; empty: all
    // The URL path to the path beneath the root: the root's is the URL's.
    PathMap paths{config::Route{}, {}, {}};
};

struct ScriptTarget {
    enum class Kind : std::uint8_t {
        script,      // run script_name with path_info
        static_file, // serve the path as a static file (or directory)
        add_slash,   // a directory asked without its trailing slash: 301
        forbidden,   // 403
        not_found,   // 404
    };
    Kind kind = Kind::not_found;
    std::string_view script_name; // into the path, the scratch buffer or the rules
    std::string_view path_info;   // into the path; empty if none
    // The script beneath the root (SCRIPT_FILENAME's end): script_name, or
    // with an alias what it maps to.
    std::string_view script_file;
};

class ScriptResolver {
public:
    // Checks files beneath the directory `root` names by `resolver`.
    ScriptResolver(std::string root, Resolver resolver, ScriptRules rules);
    ~ScriptResolver();
    ScriptResolver(const ScriptResolver&) = delete;
    ScriptResolver& operator=(const ScriptResolver&) = delete;

    // The target for a normalised `path`. An index script's name is built in
    // `scratch`, which holds scratch_size(path.size()) bytes and must not
    // overlap `path`.
    ScriptTarget resolve(std::string_view path, char* scratch) const;
    std::size_t scratch_size(std::size_t path_size) const { return path_size + longest_index_; }

    const ScriptRules& rules() const { return rules_; }
    // Whether a file name has one of the script extensions.
    bool is_script_name(std::string_view name) const;

    // The root as this loop last resolved it, symlinks resolved: what PHP
    // gets as DOCUMENT_ROOT and in SCRIPT_FILENAME (nginx's $realpath_root).
    // With a symlinked root a deploy switches, PHP then sees paths in the
    // release that runs; given the link's path, its realpath cache (two
    // minutes) and opcache would map them to the old release, whose new
    // scripts do not exist there. Held by the request across a switch.
    std::shared_ptr<const std::string> document_root() const;

private:
    enum class FileKind : std::uint8_t { missing, regular, directory, other };
    // The disk as one request sees it: this loop's watch, told of every
    // change made before the request came (one read, once a request), and
    // this loop's root; and this resolver's state on the loop.
    struct Disk {
        FsWatch* watch;
        int root; // or -errno
        LoopScripts* scripts;
        // Every kind_of() answer so far holds until the watch sees a change.
        bool watched = true;
    };
    Disk synced_disk() const;
    // resolve() on that disk, without the last target kept.
    ScriptTarget resolve_on(Disk& disk, std::string_view path, char* scratch) const;
    // What is at `path` (normalised, leading '/') beneath the root.
    FileKind kind_of(Disk& disk, std::string_view path) const;
    ScriptTarget not_found_or_fallback(Disk& disk) const;
    // A script that exists: it runs unless deny or the allow-list say no.
    ScriptTarget script(std::string_view name, std::string_view path_info) const;

    std::string root_;
    Resolver resolver_;
    ScriptRules rules_;
    std::size_t longest_index_ = 0;
    std::uint64_t id_; // identifies this resolver to the per-thread caches
    std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
};

} // namespace weft::handlers
