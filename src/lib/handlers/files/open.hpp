#pragma once
// Opening files beneath a document root without ever leaving it, whatever
// the path or the symlinks in the tree say: openat2 with RESOLVE_BENEATH where
// the kernel has it (Linux 5.6), else a walk one component at a time that
// follows no symlink at all.

#include <cstdint>
#include <utility>

namespace weft::handlers {

// An owned file descriptor, closed when it goes.
class OwnedFd {
public:
    OwnedFd() = default;
    explicit OwnedFd(int fd) : fd_(fd) {}
    OwnedFd(OwnedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    OwnedFd& operator=(OwnedFd&& other) noexcept;
    OwnedFd(const OwnedFd&) = delete;
    OwnedFd& operator=(const OwnedFd&) = delete;
    ~OwnedFd() { reset(); }

    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }
    void reset(int fd = -1);

private:
    int fd_ = -1;
};

enum class Resolver : std::uint8_t {
    openat2, // symlinks inside the root are followed, none leads out
    walk,    // no symlink is followed
    follow,  // symlinks are followed wherever they lead (nginx's default);
             // the path itself cannot climb out: it is normalised
};

// The root directory as an O_PATH descriptor, or -errno.
int open_root(const char* path);

// What this kernel offers for resolving beneath `root`: openat2 unless it is
// missing (ENOSYS) or filtered out (a seccomp policy's EPERM).
Resolver probe_resolver(int root);

// Opens `relative` beneath `root` for reading: a descriptor or -errno.
// `relative` has no leading '/'; "" is the root itself, and a trailing '/'
// requires a directory. Escaping the root (a "..", a symlink that leads out,
// /proc magic links) fails with -EXDEV or -ELOOP; a symlink openat2 refuses
// (an absolute one) is followed when the file it reaches is beneath the root;
// with Resolver::walk any symlink fails (-ELOOP or -ENOTDIR). FIFOs and
// devices open without blocking (O_NONBLOCK): the caller serves only regular
// files, but a FIFO in the tree must not stall the loop at open.
int open_beneath(int root, const char* relative, Resolver resolver);

} // namespace weft::handlers
