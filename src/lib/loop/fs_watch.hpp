#pragma once
// FsWatch: one loop's view of changes on disk, for caches that must never
// serve a file the disk no longer holds (inotify, one instance per loop).
//
// A cache watches each directory entry a cached answer depends on (each
// component of its path, symlinks included) and keeps a WatchStamp: a change
// counter of (directory, bucket of the entry's name) and its value then. Any
// event naming an entry of that bucket bumps the counter, so a stamp that no
// longer matches means "look again"; other names of the same bucket only
// cost a needless look. An event about the directory itself (deleted, moved,
// unmounted) bumps all its buckets, and a lost event (the queue overflowed,
// a read failed) bumps every counter: never stale, at worst a cold cache.
//
// Ordering: the kernel queues an event before the write or rename that
// caused it returns. So a cache that calls drain() after the request's
// bytes were read and before it trusts an entry hears of every change made
// before those bytes arrived: the next request after a change sees it. That
// read (EAGAIN when nothing changed) is the one syscall per request this
// costs on epoll; the checks themselves compare integers in memory. (On a
// ring that moves bytes, a request that came with a receive's completion
// needs no read: see drain().) Without it,
// epoll alone cannot order them: a coroutine reads a request without a poll
// when it arrives while the previous response is going out (or the accept
// batch takes a connection the listener's event did not announce), and the
// change can land in between; a loaded test machine did that.
//
// The fd is also watched by the loop, which drains it when readable, so an
// idle loop's queue does not overflow.

#include "loop/loop.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace weft {

struct WatchStamp {
    std::uint32_t counter; // index into the watch's counters
    std::uint32_t value;   // the counter when the stamp was made
};

class FsWatch final : private FdWatcher {
public:
    static constexpr std::uint32_t kBuckets = 32; // per directory
    // Directories and files one loop watches at most; past them, watch()
    // and watch_file() say -ENOSPC.
    static constexpr std::size_t kMaxDirectories = 4096;
    static constexpr std::size_t kMaxFiles = 4096;

    // A watch on `loop` (its inotify fd registered there), or nullptr with
    // errno set: no inotify (too many instances, say).
    static std::unique_ptr<FsWatch> open(Loop& loop);
    ~FsWatch();
    FsWatch(const FsWatch&) = delete;
    FsWatch& operator=(const FsWatch&) = delete;

    // Watches the directory at `directory` for changes of its entry `name`
    // (the entry itself, or the file it names being written); 0 or -errno:
    // -ENOSPC when out of watches (fs.inotify.max_user_watches), -ENOENT or
    // -ENOTDIR when it is no directory. A caller that gets an error must not
    // trust what it caches for this entry.
    int watch(const char* directory, std::string_view name, WatchStamp& stamp);

    // Watches the file at `path` itself (its inode, followed through
    // symlinks): a write, truncation, change of mode or link count made
    // through ANY of its names, which a directory's watch hears only when it
    // is made through a name in that directory. 0 or -errno, as watch().
    // The watch goes when the file's last name does.
    int watch_file(const char* path, WatchStamp& stamp);

    bool current(WatchStamp stamp) const { return counters_[stamp.counter] == stamp.value; }
    // Counts the changes seen: stamps checked when it had some value are
    // all still current while it keeps it.
    std::uint64_t changes() const { return changes_; }
    // Distinct for every FsWatch the process makes: stamps of one mean
    // nothing to another (a thread may run several loops in turn).
    std::uint64_t id() const { return id_; }

    // Reads every queued event (one read when there is none), before a
    // cache trusts its stamps: skipped on a ring that moves bytes when no
    // request's bytes were read by a syscall since the last read (drain()
    // in fs_watch.cpp says why that is enough).
    void drain();

    // Directories and files watched now.
    std::size_t directories() const { return by_wd_.size() - files_; }
    std::size_t files() const { return files_; }

private:
    FsWatch(Loop& loop, int fd);
    static void on_ready(FdWatcher& self, std::uint8_t ready);
    void read_events(); // what drain() does, always: when the loop sees the fd readable
    void bump_bucket(std::uint32_t record, std::string_view name);
    void bump_directory(std::uint32_t record);
    void bump_all();
    // Adds a watch of `path` with `mask`, within `limit` watches of its kind
    // (`counted`, which it keeps); the stamp covers `name`'s bucket.
    int add(const char* path, std::uint32_t mask, std::size_t& counted, std::size_t limit,
            std::string_view name, WatchStamp& stamp);

    Loop& loop_;
    int fd_;
    std::uint64_t id_;
    std::uint64_t changes_ = 0;
    // kBuckets counters per directory record. Counters only grow, and a
    // record freed (its directory gone) is reused as it is, so no stamp of
    // the old directory can match the new one.
    std::vector<std::uint32_t> counters_;
    struct Watched {
        std::uint32_t record;
        bool file;
    };
    std::unordered_map<int, Watched> by_wd_; // watch descriptor -> what it watches
    std::size_t directories_ = 0;
    std::size_t files_ = 0;
    std::vector<std::uint32_t> free_records_;
};

} // namespace weft
