#include "handlers/file_open.hpp"

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
// the root: asked of the opened descriptor itself, so no rename between the
// open and the check can change the answer for the file that is served.
int open_if_beneath(int root, const char* relative) {
    OwnedFd fd{::openat(root, relative, kReadFlags)};
    if (fd.get() < 0) return -errno;
    char root_path[PATH_MAX];
    char file_path[PATH_MAX];
    const ssize_t root_size = path_of(root, root_path);
    const ssize_t file_size = path_of(fd.get(), file_path);
    if (root_size <= 0 || file_size <= 0) return -EXDEV;
    const std::string_view base{root_path, static_cast<std::size_t>(root_size)};
    const std::string_view file{file_path, static_cast<std::size_t>(file_size)};
    const bool beneath = file.starts_with(base) &&
                         (file.size() == base.size() || base == "/" || file[base.size()] == '/');
    return beneath ? fd.release() : -EXDEV;
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
