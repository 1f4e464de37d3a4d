#include "handlers/files/open.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace weft::handlers {
namespace {

constexpr int kReadFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

int openat2_beneath(int root, const char* relative) {
    open_how how{};
    how.flags = kReadFlags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const char* path = *relative ? relative : ".";
    // EAGAIN: a concurrent rename made the kernel unsure a ".." stayed
    // beneath; trying again is what the man page asks for.
    for (int attempt = 0; attempt < 3; ++attempt) {
        const long fd = syscall(SYS_openat2, root, path, &how, sizeof how);
        if (fd >= 0) return static_cast<int>(fd);
        if (errno != EAGAIN) return -errno;
    }
    return -EAGAIN;
}

// The path an open descriptor names now, from /proc: its length, or -1.
ssize_t path_of(int fd, char (&out)[PATH_MAX]) {
    char link[32];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, out, sizeof out - 1);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof out - 1) return -1;
    out[n] = '\0';
    return n;
}

// A symlink RESOLVE_BENEATH refused (an absolute one, or one that climbs
// out and back in) is followed after all when what it reaches lies beneath
// the root. The path is first resolved to an O_PATH descriptor, which opens
// nothing (no device, no FIFO) and follows no /proc magic link (those lead
// into other mount namespaces, where a path's text means another file);
// what /proc then says that descriptor names, if it is beneath the root, is
// opened again beneath the root, with RESOLVE_BENEATH: a rename in between
// can change which file that is, never make it one outside. Any failure is
// -EXDEV, so a link planted in the root cannot tell what exists outside it.
int open_if_beneath(int root, const char* relative) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_NO_MAGICLINKS;
    const OwnedFd found{static_cast<int>(syscall(SYS_openat2, root, relative, &how, sizeof how))};
    if (found.get() < 0) return -EXDEV;
    char root_path[PATH_MAX];
    char file_path[PATH_MAX];
    const ssize_t root_size = path_of(root, root_path);
    const ssize_t file_size = path_of(found.get(), file_path);
    if (root_size <= 0 || file_size <= 0) return -EXDEV;
    const std::string_view base{root_path, static_cast<std::size_t>(root_size)};
    const std::string_view file{file_path, static_cast<std::size_t>(file_size)};
    const std::size_t skip = base == "/" ? 1 : base.size() + 1;
    if (file.size() <= skip || !file.starts_with(base) || file[skip - 1] != '/') return -EXDEV;
    const int fd = openat2_beneath(root, file_path + skip);
    return fd >= 0 ? fd : -EXDEV;
}

// One component at a time: every directory on the way is opened O_PATH with
// O_NOFOLLOW, so a symlink anywhere ends the walk, and "." or ".." never
// appear in a component we open.
int walk_beneath(int root, const char* relative) {
    OwnedFd directory;
    int at = root;
    const char* p = relative;
    char name[NAME_MAX + 1];
    for (;;) {
        while (*p == '/') ++p;
        if (*p == '\0') {
            // The root itself, or a trailing '/': the directory reached.
            const int fd = openat(at, ".", kReadFlags | O_DIRECTORY);
            return fd >= 0 ? fd : -errno;
        }
        const char* end = std::strchr(p, '/');
        const std::size_t size = end ? static_cast<std::size_t>(end - p) : std::strlen(p);
        if (size > NAME_MAX) return -ENAMETOOLONG;
        if ((size == 1 && p[0] == '.') || (size == 2 && p[0] == '.' && p[1] == '.')) return -EXDEV;
        std::memcpy(name, p, size);
        name[size] = '\0';
        if (!end) {
            const int fd = openat(at, name, kReadFlags | O_NOFOLLOW);
            return fd >= 0 ? fd : -errno;
        }
        const int next = openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) return -errno;
        directory.reset(next);
        at = next;
        p = end;
    }
}

} // namespace

OwnedFd& OwnedFd::operator=(OwnedFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
}

void OwnedFd::reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

int open_root(const char* path) {
    const int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

Resolver probe_resolver(int root) {
    const int fd = openat2_beneath(root, "");
    if (fd >= 0) {
        close(fd);
        return Resolver::openat2;
    }
    return (fd == -ENOSYS || fd == -EPERM || fd == -E2BIG) ? Resolver::walk : Resolver::openat2;
}

int open_beneath(int root, const char* relative, Resolver resolver) {
    switch (resolver) {
    case Resolver::openat2: {
        const int fd = openat2_beneath(root, relative);
        return fd == -EXDEV && *relative ? open_if_beneath(root, relative) : fd;
    }
    case Resolver::walk:
        return walk_beneath(root, relative);
    case Resolver::follow:
        break;
    }
    const int fd =
        ::openat(root, *relative ? relative : ".", O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    return fd >= 0 ? fd : -errno;
}

} // namespace weft::handlers
