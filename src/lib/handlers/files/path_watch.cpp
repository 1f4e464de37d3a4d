#include "handlers/files/path_watch.hpp"

#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>

namespace weft::handlers {
namespace {

constexpr int kMaxLinks = 40; // the kernel's own limit on a path's symlinks

// Pushes the components of `path` so that the first is taken first.
void push_components(std::vector<std::string>& todo, std::string_view path) {
    std::size_t end = path.size();
    while (end > 0) {
        const std::size_t slash = path.rfind('/', end - 1);
        const std::size_t start = slash == std::string_view::npos ? 0 : slash + 1;
        if (end > start) todo.emplace_back(path.substr(start, end - start));
        if (slash == std::string_view::npos) break;
        end = slash;
    }
}

std::string joined(const std::string& directory, std::string_view name) {
    std::string path = directory;
    if (path.empty() || path.back() != '/') path += '/';
    path += name;
    return path;
}

} // namespace

std::string fd_path(int fd) {
    char text[32];
    std::snprintf(text, sizeof text, "/proc/self/fd/%d", fd);
    return text;
}

int watch_path(FsWatch& watch, std::string directory, std::string_view relative, PathWatch& out,
               struct stat& st) {
    out.stamps.clear();
    out.seen = watch.changes();
    std::vector<std::string> todo;
    push_components(todo, relative);
    int links = 0;
    while (!todo.empty()) {
        const std::string name = std::move(todo.back());
        todo.pop_back();
        if (name == ".") continue;
        if (name == "..") {
            // The directory has no symlink left in it: the kernel's ".."
            // is the lexical one (or the parent of a /proc/self/fd/N).
            directory = joined(directory, name);
            continue;
        }
        WatchStamp stamp;
        if (const int error = watch.watch(directory.c_str(), name, stamp); error < 0)
            return error == -ENOENT || error == -ENOTDIR ? static_cast<int>(Walked::missing)
                                                         : error;
        out.stamps.push_back(stamp);
        std::string path = joined(directory, name);
        if (::lstat(path.c_str(), &st) != 0)
            return errno == ENOENT || errno == ENOTDIR ? static_cast<int>(Walked::missing) : -errno;
        if (S_ISLNK(st.st_mode)) {
            if (++links > kMaxLinks) return -ELOOP;
            char target[PATH_MAX];
            const ssize_t n = ::readlink(path.c_str(), target, sizeof target);
            if (n <= 0 || n == sizeof target) return n < 0 ? -errno : -ENAMETOOLONG;
            const std::string_view link{target, static_cast<std::size_t>(n)};
            // (assign(1, '/'), not = "/": g++ 12 for aarch64 takes the
            // latter for an overlapping copy, -Wrestrict.)
            if (link.front() == '/') directory.assign(1, '/');
            push_components(todo, link);
            continue;
        }
        if (todo.empty()) return static_cast<int>(Walked::found);
        if (!S_ISDIR(st.st_mode)) return static_cast<int>(Walked::missing);
        directory = std::move(path);
    }
    // The directory itself (an empty path, or one ending in a link to a
    // directory that was followed).
    if (::stat(directory.c_str(), &st) != 0) return -errno;
    return static_cast<int>(Walked::found);
}

LoopRoot::LoopRoot(std::string path) : path_(std::move(path)) {
    if (!path_.empty() && path_.front() != '/') {
        char cwd[PATH_MAX];
        if (::getcwd(cwd, sizeof cwd)) path_ = joined(cwd, path_);
    }
    std::string configured = path_;
    while (!configured.empty() && configured.back() == '/') configured.pop_back();
    real_path_ = std::make_shared<const std::string>(std::move(configured));
}

// Past the fast path: no watch, or something on the path changed.
int LoopRoot::checked_fd(FsWatch* watch) {
    if (fd_.get() >= 0) {
        if (watch && watch_id_ == watch->id()) {
            if (watch_.current(*watch)) return fd_.get();
        } else if (!watch || tried_id_ == watch->id()) {
            struct stat st {};
            if (::stat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_)
                return fd_.get();
        }
    }
    reopen(watch);
    return fd_.get() >= 0 ? fd_.get() : -ENOENT;
}

void LoopRoot::reopen(FsWatch* watch) {
    // Watched before it is opened: a switch after the walk shows in a stamp.
    watch_id_ = 0;
    tried_id_ = watch ? watch->id() : 0;
    if (watch) {
        struct stat walked {};
        const std::string_view relative = std::string_view(path_).substr(1);
        if (watch_path(*watch, "/", relative, watch_, walked) >= 0) watch_id_ = watch->id();
    }
    const int opened = open_root(path_.c_str());
    if (opened < 0) return; // keep the last one
    struct stat st {};
    if (::fstat(opened, &st) != 0) {
        ::close(opened);
        return;
    }
    if (fd_.get() >= 0 && st.st_dev == device_ && st.st_ino == inode_) {
        ::close(opened); // the same directory
        return;
    }
    fd_.reset(opened);
    device_ = st.st_dev;
    inode_ = st.st_ino;
    ++generation_;
    char real[PATH_MAX];
    const ssize_t n = ::readlink(fd_path(opened).c_str(), real, sizeof real);
    if (n > 0 && n < static_cast<ssize_t>(sizeof real) && real[0] == '/')
        real_path_ = std::make_shared<const std::string>(real, n == 1 ? 0 : n);
}

// Whether every change to `path` (beneath `root`) is made by this kernel on
// a file system it tells inotify about: local disks and memory. One statfs,
// when an entry is cached.
bool inotify_sees_all(int root, const char* path) {
    const std::string full = fd_path(root) + "/" + path;
    struct statfs fs {};
    if (::statfs(full.c_str(), &fs) != 0) return false;
    switch (static_cast<unsigned long>(fs.f_type)) {
    case 0xEF53:     // ext2, ext3, ext4
    case 0x58465342: // xfs
    case 0x9123683E: // btrfs
    case 0x01021994: // tmpfs
    case 0xF2F52010: // f2fs
    case 0x2FC12FC1: // zfs
    case 0x794C7630: // overlayfs (a container's root)
        return true;
    default:
        return false;
    }
}

} // namespace weft::handlers
