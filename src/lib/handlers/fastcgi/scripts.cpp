#include "handlers/fastcgi/scripts.hpp"

#include "handlers/files/access.hpp"
#include "handlers/files/path_watch.hpp"
#include "handlers/per_loop.hpp"
#include "loop/fs_watch.hpp"
#include "loop/loop.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <ctime>
#include <random>
#include <unordered_map>

namespace weft::handlers {

namespace {

// Entries per thread before the cache starts over.
constexpr std::size_t kCacheEntries = 4096;

std::atomic<std::uint64_t> next_resolver_id{1};

// A per-process seed: the paths are the clients' to choose, so which
// bucket one falls in is not theirs to know.
const std::uint64_t kHashSeed = [] {
    std::random_device random;
    return std::uint64_t{random()} << 32 | random();
}();

std::uint64_t load64(const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Keys are the resolver's id (8 bytes) then the path: looked up through a
// view built on the stack, so a hit allocates nothing. Hashed a word at a
// time (the last one overlapping): std::hash's byte-wise Murmur cost 67
// instructions a request.
struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
        constexpr std::uint64_t kMultiplier = 0x9e3779b97f4a7c15;
        std::uint64_t h = (kHashSeed ^ key.size()) * kMultiplier;
        const auto mix = [&](std::uint64_t word) {
            h = (h ^ word) * kMultiplier;
            h ^= h >> 32;
        };
        const char* p = key.data();
        const std::size_t n = key.size();
        if (n >= 8) {
            for (std::size_t i = 0; i + 8 < n; i += 8) mix(load64(p + i));
            mix(load64(p + n - 8));
        } else {
            for (std::size_t i = 0; i < n; ++i) mix(static_cast<unsigned char>(p[i]));
        }
        return static_cast<std::size_t>(h ^ h >> 29);
    }
};

// Only what could be watched is kept: it holds until its path changes.
struct Known {
    std::uint8_t kind;
    PathWatch watch;
};

using KindCache = std::unordered_map<std::string, Known, KeyHash, std::equal_to<>>;

KindCache& thread_cache() {
    thread_local KindCache cache;
    return cache;
}

} // namespace

// The last path resolved on a loop and its target, each view of it kept as
// where it points: into the path, into the scratch (whose bytes are kept
// too), or elsewhere (the rules, which outlive it), so that another
// request's buffers get views of their own.
struct KeptTarget {
    enum class Base : std::uint8_t { elsewhere, path, scratch };
    struct View {
        Base base = Base::elsewhere;
        const char* data = nullptr; // Base::elsewhere
        std::size_t offset = 0;
        std::size_t size = 0;
    };
    bool valid = false;        // synced_disk() ends it when the root or the watch is another
    std::uint64_t changes = 0; // FsWatch::changes() when it was resolved
    std::string path;
    std::string scratch;
    ScriptTarget::Kind kind = ScriptTarget::Kind::not_found;
    View script_name, path_info, script_file;

    View keep(std::string_view view, std::string_view in_path, std::string_view in_scratch) {
        const auto at = reinterpret_cast<std::uintptr_t>(view.data());
        for (const auto& [base, text] :
             {std::pair{Base::path, in_path}, {Base::scratch, in_scratch}}) {
            const auto start = reinterpret_cast<std::uintptr_t>(text.data());
            if (view.data() && at >= start && at + view.size() <= start + text.size()) {
                if (base == Base::scratch)
                    scratch.assign(text.data(), std::max(scratch.size(), at - start + view.size()));
                return {base, nullptr, at - start, view.size()};
            }
        }
        return {Base::elsewhere, view.data(), 0, view.size()};
    }
    std::string_view view(const View& v, std::string_view in_path, const char* in_scratch) const {
        switch (v.base) {
        case Base::path:
            return {in_path.data() + v.offset, v.size};
        case Base::scratch:
            return {in_scratch + v.offset, v.size};
        case Base::elsewhere:
            break;
        }
        return {v.data, v.size};
    }
};

// A resolver's root on this thread's loop, what the cache's entries of it
// were made under, and its last target.
struct LoopScripts {
    explicit LoopScripts(const std::string& path) : root(path) {}
    LoopRoot root;
    std::uint64_t root_generation = 0;
    std::uint64_t watch_id = 0;
    KeptTarget last;
};

namespace {

LoopScripts& loop_scripts(std::uint64_t id, const std::shared_ptr<const bool>& alive,
                          const std::string& root) {
    return per_loop<LoopScripts>(id, alive, root);
}

} // namespace

ScriptResolver::ScriptResolver(std::string root, Resolver resolver, ScriptRules rules)
    : root_(std::move(root)), resolver_(resolver), rules_(std::move(rules)),
      id_(next_resolver_id.fetch_add(1, std::memory_order_relaxed)) {
    for (const std::string& name : rules_.index)
        longest_index_ = std::max(longest_index_, name.size());
}

ScriptResolver::~ScriptResolver() = default;

ScriptResolver::Disk ScriptResolver::synced_disk() const {
    Loop* loop = Loop::current();
    FsWatch* watch = loop ? loop->fs_watch() : nullptr;
    if (watch) watch->drain(); // every change made before the request came
    LoopScripts& scripts = loop_scripts(id_, alive_, root_);
    const int root = scripts.root.fd(watch);
    const std::uint64_t watch_id = watch ? watch->id() : 0;
    if (scripts.root_generation != scripts.root.generation() || scripts.watch_id != watch_id) {
        // Another directory (a switched root), or stamps of another watch.
        const std::string_view id{reinterpret_cast<const char*>(&id_), 8};
        std::erase_if(thread_cache(),
                      [&](const auto& entry) { return entry.first.starts_with(id); });
        scripts.root_generation = scripts.root.generation();
        scripts.watch_id = watch_id;
        scripts.last.valid = false;
    }
    return {watch, root, &scripts};
}

ScriptResolver::FileKind ScriptResolver::kind_of(Disk& disk, std::string_view url) const {
    const std::optional<std::string_view> local = rules_.paths.local(url);
    if (!local) return FileKind::missing;
    const std::string_view path = local->empty() ? std::string_view("/") : *local;
    // The key, then a NUL: key + 9 is the path without its '/', as
    // open_beneath wants it. Per thread, not on the stack: nothing here
    // waits, so no other coroutine can come in between. Written in place:
    // assign, append and push_back were 40 instructions.
    thread_local std::string key;
    if (key.size() < 9 + path.size()) key.resize(9 + path.size() + 64);
    std::memcpy(key.data(), &id_, 8);
    std::memcpy(key.data() + 8, path.data(), path.size());
    key[8 + path.size()] = '\0';
    const std::string_view key_view{key.data(), 8 + path.size()};
    KindCache& cache = thread_cache();
    FsWatch* const watch = disk.watch;
    const int root = disk.root;
    auto found = cache.find(key_view);
    if (found != cache.end() && watch && found->second.watch.current(*watch))
        return static_cast<FileKind>(found->second.kind);
    disk.watched = disk.watched && watch && root >= 0; // unless cached below
    if (root < 0) return FileKind::missing;

    // Watched before it is opened: a change after the walk is an event.
    PathWatch watched;
    struct stat walked {};
    const bool cacheable = watch && inotify_sees_all(root, key.c_str() + 9) &&
                           watch_path(*watch, fd_path(root), key.c_str() + 9, watched, walked) >= 0;
    FileKind kind = FileKind::missing;
    const int fd = open_beneath(root, key.c_str() + 9, resolver_);
    if (fd >= 0) {
        struct stat st {};
        if (::fstat(fd, &st) == 0) {
            kind = S_ISREG(st.st_mode)   ? FileKind::regular
                   : S_ISDIR(st.st_mode) ? FileKind::directory
                                         : FileKind::other;
        }
        ::close(fd);
    } else if (fd == -EACCES || fd == -EPERM) {
        kind = FileKind::other;
    }
    if (!cacheable) {
        disk.watched = false;
        if (found != cache.end()) cache.erase(found);
    } else if (found != cache.end()) {
        found->second = {static_cast<std::uint8_t>(kind), std::move(watched)};
    } else {
        if (cache.size() >= kCacheEntries) cache.clear();
        cache.emplace(std::string(key_view),
                      Known{static_cast<std::uint8_t>(kind), std::move(watched)});
    }
    return kind;
}

std::shared_ptr<const std::string> ScriptResolver::document_root() const {
    return loop_scripts(id_, alive_, root_).root.real_path();
}

bool ScriptResolver::is_script_name(std::string_view segment) const {
    for (const std::string& e : rules_.extensions) {
        if (segment.size() <= e.size()) continue;
        const char* end = segment.data() + segment.size() - e.size();
        // ".php" and its like by a word, not a memcmp call.
        if (e.size() == 4 ? std::memcmp(end, e.data(), 4) == 0
                          : std::string_view(end, e.size()) == e)
            return true;
    }
    return false;
}

ScriptTarget ScriptResolver::not_found_or_fallback(Disk& disk) const {
    const std::string& fallback = rules_.fallback;
    if (fallback.empty() || kind_of(disk, fallback) != FileKind::regular) return {};
    // The parser checked that `scripts` allows it; create(), that it maps.
    return {ScriptTarget::Kind::script, fallback, {}, rules_.paths.local(fallback).value_or("")};
}

ScriptTarget ScriptResolver::script(std::string_view name, std::string_view path_info) const {
    using Kind = ScriptTarget::Kind;
    // The path was checked; an index script or one with PATH_INFO after
    // it is a name of its own (`*.md` would miss /a.php/x.md's a.php).
    if (is_denied(rules_.deny, name)) return {Kind::forbidden, {}, {}, {}};
    if (!rules_.scripts.empty() && !any_matches(rules_.scripts, name)) return {};
    return {Kind::script, name, path_info, rules_.paths.local(name).value_or("")};
}

ScriptTarget ScriptResolver::resolve(std::string_view path, char* scratch) const {
    Disk disk = synced_disk();
    KeptTarget& last = disk.scripts->last;
    FsWatch* const watch = disk.watch;
    // The same path, and no change seen since: every answer it was made of
    // holds (what was not watched was not kept).
    if (last.valid && watch && last.changes == watch->changes() && path == last.path) [[likely]] {
        if (!last.scratch.empty()) std::memcpy(scratch, last.scratch.data(), last.scratch.size());
        return {last.kind, last.view(last.script_name, path, scratch),
                last.view(last.path_info, path, scratch),
                last.view(last.script_file, path, scratch)};
    }
    const ScriptTarget target = resolve_on(disk, path, scratch);
    last.valid = disk.watched && watch;
    if (last.valid) {
        last.changes = watch->changes();
        last.path.assign(path);
        last.scratch.clear();
        last.kind = target.kind;
        const std::string_view in_scratch{scratch, scratch_size(path.size())};
        last.script_name = last.keep(target.script_name, path, in_scratch);
        last.path_info = last.keep(target.path_info, path, in_scratch);
        last.script_file = last.keep(target.script_file, path, in_scratch);
    }
    return target;
}

ScriptTarget ScriptResolver::resolve_on(Disk& disk, std::string_view path, char* scratch) const {
    using Kind = ScriptTarget::Kind;
    if (is_denied(rules_.deny, path)) return {Kind::forbidden, {}, {}, {}};
    // The dot rule denies files, not routes: a hidden file or directory
    // that exists is 403 (and so is all beneath it), while a path the
    // front controller answers may hold a segment starting with a dot
    // (MediaWiki's /wiki/.NET): nothing exists beneath a missing one.
    const std::size_t dot_end = dot_segment_end(path);
    if (dot_end != std::string_view::npos &&
        kind_of(disk, path.substr(0, dot_end)) != FileKind::missing)
        return {Kind::forbidden, {}, {}, {}};

    // The first segment that is a script: everything after it is PATH_INFO.
    std::size_t start = 1;
    bool last_is_script_name = false;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        // Views by hand, here and below: substr's bounds check is a call
        // (10 instructions each), and these are within the path.
        const std::string_view segment{path.data() + start, end - start};
        const bool script_name = is_script_name(segment);
        last_is_script_name = end == path.size() && script_name;
        if (script_name) {
            const std::string_view script_path{path.data(), end};
            const FileKind kind = kind_of(disk, script_path);
            if (kind == FileKind::regular)
                return script(script_path, {path.data() + end, path.size() - end});
            if (kind == FileKind::directory) last_is_script_name = false;
            // Beneath a file or nothing, no script can exist.
            if (kind != FileKind::directory) break;
        }
        start = end + 1;
    }
    if (last_is_script_name) return {Kind::not_found, {}, {}, {}};

    switch (kind_of(disk, path)) {
    case FileKind::directory:
        if (path.back() != '/') return {Kind::add_slash, {}, {}, {}};
        std::memcpy(scratch, path.data(), path.size());
        for (const std::string& name : rules_.index) {
            std::memcpy(scratch + path.size(), name.data(), name.size());
            const std::string_view index{scratch, path.size() + name.size()};
            if (kind_of(disk, index) != FileKind::regular) continue;
            // The first index that exists wins: a script runs, any other
            // file is the static handler's (whose index list is the rest).
            if (is_script_name(name)) return script(index, {});
            break;
        }
        if (rules_.static_files) return {Kind::static_file, {}, {}, {}};
        return not_found_or_fallback(disk);
    case FileKind::regular:
        if (rules_.static_files) return {Kind::static_file, {}, {}, {}};
        return not_found_or_fallback(disk);
    case FileKind::other:
        return {Kind::forbidden, {}, {}, {}};
    case FileKind::missing:
        break;
    }
    return not_found_or_fallback(disk);
}

} // namespace weft::handlers
