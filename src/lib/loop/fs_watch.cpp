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
                                IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK;
// Events about the watched directory itself.
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
    const int wd = inotify_add_watch(fd_, directory, kMask);
    if (wd < 0) return -errno;
    auto [found, added] = by_wd_.try_emplace(wd, 0);
    if (added && by_wd_.size() > kMaxDirectories) {
        // Watches are never taken back while their directory lives, so a
        // crawl of a large tree would take the user's whole allowance
        // (fs.inotify.max_user_watches, shared by every process of the
        // user): past the cap, entries are checked at each use instead.
        by_wd_.erase(found);
        inotify_rm_watch(fd_, wd);
        return -ENOSPC;
    }
    if (added) {
        if (!free_records_.empty()) {
            found->second = free_records_.back();
            free_records_.pop_back();
        } else {
            found->second = static_cast<std::uint32_t>(counters_.size() / kBuckets);
            counters_.resize(counters_.size() + kBuckets, 0);
        }
    }
    stamp.counter = found->second * kBuckets + bucket_of(name);
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
            if (event.len == 0 || (event.mask & kSelf)) {
                bump_directory(found->second);
            } else {
                bump_bucket(found->second, {name, ::strnlen(name, event.len)});
            }
            if (event.mask & IN_IGNORED) {
                // The watch is gone (its directory deleted or unmounted).
                free_records_.push_back(found->second);
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
