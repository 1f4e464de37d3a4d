#include "util/log_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace weft {

namespace {

// Only root can change what the names in `path`'s directory point to.
bool directory_only_root_writes(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    const std::string directory = slash == std::string::npos ? "."
                                  : slash == 0               ? "/"
                                                             : path.substr(0, slash);
    struct stat info {};
    return ::stat(directory.c_str(), &info) == 0 && info.st_uid == 0 &&
           (info.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

} // namespace

int open_log_file(const std::string& path) {
    int flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC;
    if (::geteuid() == 0 && !directory_only_root_writes(path)) flags |= O_NOFOLLOW;
    const int fd = ::open(path.c_str(), flags, 0640);
    return fd < 0 ? -errno : fd;
}

int give_log_file(int fd, const std::string& path, unsigned uid, unsigned gid) {
    struct stat opened {};
    struct stat named {};
    if (::fstat(fd, &opened) != 0 || ::lstat(path.c_str(), &named) != 0) return -1;
    const bool itself = S_ISREG(named.st_mode) && named.st_nlink == 1 &&
                        named.st_dev == opened.st_dev && named.st_ino == opened.st_ino;
    return itself ? ::fchown(fd, uid, gid) : 0;
}

} // namespace weft
