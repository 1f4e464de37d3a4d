#include "loop/fs_watch.hpp"

#include "loop/ring.hpp"

#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

namespace weft {
namespace {

// Everything that can change what a path names or what a file holds. Events
// of files already unlinked (a temp file still being written) do not matter.
constexpr std::uint32_t kMask = IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_FROM |
                                IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF |
                                IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK | IN_MASK_ADD;
// Everything that can change what a file holds or who may read it, through
// any of its names: a file watch hears a write through a hard link in a
// directory no watch covers (its link count changing is an IN_ATTRIB).
// Both masks add to what an inode's watch has (IN_MASK_ADD): a name swapped
// between a check and a watch must never narrow a directory's watch.
constexpr std::uint32_t kFileMask =
    IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_MASK_ADD;
// Events about the watched directory (or file) itself.
constexpr std::uint32_t kSelf = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED;

std::atomic<std::uint64_t> next_id{1};

std::uint32_t bucket_of(std::string_view name) {
    std::uint32_t h = 2166136261u; // FNV-1a
    for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    return (h ^ (h >> 16)) % FsWatch::kBuckets;
}

} // namespace

std::unique_ptr<FsWatch> FsWatch::open(Loop& loop) {
    const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) return nullptr;
    std::unique_ptr<FsWatch> watch(new FsWatch(loop, fd));
    if (const int error = loop.watch_fd(fd, *watch, kReadable); error < 0) {
        watch.reset();
        errno = -error;
        return nullptr;
    }
    return watch;
}

FsWatch::FsWatch(Loop& loop, int fd)
    : FdWatcher{&FsWatch::on_ready}, loop_(loop), fd_(fd),
      id_(next_id.fetch_add(1, std::memory_order_relaxed)) {}

FsWatch::~FsWatch() {
    loop_.close_fd(fd_);
}

void FsWatch::on_ready(FdWatcher& self, std::uint8_t) {
    static_cast<FsWatch&>(self).read_events();
}

void FsWatch::drain() {
    // On a ring that moves bytes, a request whose bytes came with a
    // receive's completion is served after every completion before it, the
    // poll of this fd's included, which read the events (on_ready): those
    // queued before the bytes came were read. (The kernel runs the two
    // wake-ups' work in the order they came, so the poll's completion is
    // first.) Only bytes read by a syscall since the last read here, or a
    // loop whose requests were not taken from the ring, need a read.
    if (Ring* ring = loop_.byte_ring(); ring && ring->only_ring_input()) return;
    read_events();
}

int FsWatch::watch(const char* directory, std::string_view name, WatchStamp& stamp) {
    return add(directory, kMask, directories_, kMaxDirectories, name, stamp);
}

int FsWatch::watch_file(const char* path, WatchStamp& stamp) {
    // Events of a file's own watch carry no name and bump all its buckets.
    return add(path, kFileMask, files_, kMaxFiles, {}, stamp);
}

int FsWatch::add(const char* path, std::uint32_t mask, std::size_t& counted, std::size_t limit,
                 std::string_view name, WatchStamp& stamp) {
    const int wd = inotify_add_watch(fd_, path, mask);
    if (wd < 0) return -errno;
    auto [found, added] = by_wd_.try_emplace(wd, Watched{0, &counted == &files_});
    if (added && counted >= limit) {
        // Watches are never taken back while what they watch lives, so a
        // crawl of a large tree would take the user's whole allowance
        // (fs.inotify.max_user_watches, shared by every process of the
        // user): past the cap, entries are checked at each use instead.
        by_wd_.erase(found);
        inotify_rm_watch(fd_, wd);
        return -ENOSPC;
    }
    if (added) {
        ++counted;
        if (!free_records_.empty()) {
            found->second.record = free_records_.back();
            free_records_.pop_back();
        } else {
            found->second.record = static_cast<std::uint32_t>(counters_.size() / kBuckets);
            counters_.resize(counters_.size() + kBuckets, 0);
        }
    }
    stamp.counter = found->second.record * kBuckets + bucket_of(name);
    stamp.value = counters_[stamp.counter];
    return 0;
}

void FsWatch::read_events() {
    // Every request's bytes read before this read are covered by it.
    if (Ring* ring = loop_.byte_ring()) ring->note_events_read();
    alignas(inotify_event) char buffer[4096];
    for (;;) {
        // Straight through syscall(), without libc's cancellation toggles
        // (as connection.cpp's recv): this read is made once per request.
        const ssize_t n = ::syscall(SYS_read, fd_, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) {
            // Events may be lost: assume everything changed.
            bump_all();
            return;
        }
        for (ssize_t at = 0; at < n;) {
            inotify_event event;
            std::memcpy(&event, buffer + at, sizeof event);
            const char* name = buffer + at + sizeof event;
            at += static_cast<ssize_t>(sizeof event + event.len);
            ++changes_;
            if (event.mask & IN_Q_OVERFLOW) {
                bump_all();
                continue;
            }
            const auto found = by_wd_.find(event.wd);
            if (found == by_wd_.end()) continue; // removed already
            const Watched watched = found->second;
            if (event.len == 0 || (event.mask & kSelf)) {
                bump_directory(watched.record);
            } else {
                bump_bucket(watched.record, {name, ::strnlen(name, event.len)});
            }
            if (event.mask & IN_IGNORED) {
                // The watch is gone (what it watched deleted or unmounted).
                free_records_.push_back(watched.record);
                --(watched.file ? files_ : directories_);
                by_wd_.erase(found);
            }
        }
    }
}

void FsWatch::bump_bucket(std::uint32_t record, std::string_view name) {
    ++counters_[record * kBuckets + bucket_of(name)];
}

void FsWatch::bump_directory(std::uint32_t record) {
    for (std::uint32_t i = 0; i < kBuckets; ++i) ++counters_[record * kBuckets + i];
}

void FsWatch::bump_all() {
    ++changes_;
    for (std::uint32_t& counter : counters_) ++counter;
}

} // namespace weft
