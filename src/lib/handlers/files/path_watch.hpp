#pragma once
// Keeping per-loop caches true to the disk (loop/fs_watch.hpp): what a path
// depends on, watched, and a document root that follows its path when a
// deploy switches a symlink.
//
// A path's answer depends on every directory entry its resolution reads:
// each component in its directory, and each symlink met on the way and the
// entries its target names. watch_path() walks the path that way (as the
// kernel would, lstat and readlink per component) and watches each entry it
// reads before it reads it, so a change after the walk always shows in a
// stamp; the caller then opens or reads, and caches what it found with the
// stamps. A change made before the walk is seen by the walk itself.

#include "handlers/files/open.hpp"
#include "loop/fs_watch.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weft::handlers {

struct PathWatch {
    std::vector<WatchStamp> stamps;
    std::uint64_t seen = 0; // FsWatch::changes() when the stamps were last all current

    // Whether nothing the path depends on changed; no syscall.
    bool current(const FsWatch& watch) {
        if (seen == watch.changes()) return true;
        for (const WatchStamp stamp : stamps)
            if (!watch.current(stamp)) return false;
        seen = watch.changes();
        return true;
    }
};

enum class Walked : std::uint8_t { missing, found };

// Walks `relative` (no leading '/'; "" is the directory itself) from the
// directory `directory` (an absolute path, or /proc/self/fd/N), watching each
// entry on the way into `out`. Returns Walked::found with the lstat of what
// the path names in `st` (never a symlink), Walked::missing when a component
// does not exist or is no directory, or -errno when an entry could not be
// watched (out of watches; /proc not mounted): then nothing may be cached.
int watch_path(FsWatch& watch, std::string directory, std::string_view relative, PathWatch& out,
               struct stat& st);

// "/proc/self/fd/N": an open directory as a path the kernel resolves to it
// whatever its own path became.
std::string fd_path(int fd);

// Whether every change to `path` (beneath the directory `root`) is made by
// this kernel on a file system that tells inotify: local disks and memory,
// not NFS, CIFS or FUSE, where another host or a daemon writes unheard.
// One statfs: asked when an entry is cached, not when it is used.
bool inotify_sees_all(int root, const char* path);

// A document root as this loop sees it: an O_PATH descriptor of the
// directory its path names now. A handler's root is often a symlink that a
// deploy switches (/srv/current -> releases/42); each loop re-opens it at
// its first request after the switch, and the caches that hold answers from
// the old directory drop them when generation() moves.
class LoopRoot {
public:
    explicit LoopRoot(std::string path);
    LoopRoot(const LoopRoot&) = delete;
    LoopRoot& operator=(const LoopRoot&) = delete;

    // The root for a request now, or -errno when it never opened. With
    // `watch` (this loop's) a check is free until something on the root's
    // path changes; without, or when it could not be watched, the path is
    // stat'ed each time. If the path stops naming a directory, the last
    // one is kept (a non-atomic switch leaves a moment without one).
    int fd(FsWatch* watch) {
        if (fd_.get() >= 0 && watch && watch_id_ == watch->id() && watch_.current(*watch))
            return fd_.get();
        return checked_fd(watch);
    }
    std::uint64_t generation() const { return generation_; }
    // The directory fd() gave, as a path with no symlink and no trailing '/'
    // ("" for "/"); the configured path before the first fd(). Shared, so a
    // request can hold the one it started with across a later switch.
    const std::shared_ptr<const std::string>& real_path() const { return real_path_; }

private:
    int checked_fd(FsWatch* watch);
    void reopen(FsWatch* watch);

    std::string path_; // absolute
    std::shared_ptr<const std::string> real_path_;
    OwnedFd fd_;
    dev_t device_ = 0;
    ino_t inode_ = 0;
    PathWatch watch_;
    std::uint64_t watch_id_ = 0; // the FsWatch of watch_'s stamps; 0: not watched
    std::uint64_t tried_id_ = 0; // the FsWatch last tried (watching can fail)
    std::uint64_t generation_ = 0;
};

} // namespace weft::handlers
