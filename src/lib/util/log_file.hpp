#pragma once
// Log files as root opens them for a user it is about to become: the
// access log and the error log.
//
// A log directory that someone other than root may write to lets them plant
// a symlink at the log's path before weft starts (or before a rotation's
// reopen): root would then append request lines, which clients control, to
// the file it points to (nginx's CVE-2016-1247, aimed at /etc/ld.so.preload),
// or hand that file to the user. So root opens a log in such a directory
// only if the path is not a symlink, and gives the user only a regular file
// named directly.

#include <string>

namespace weft {

// Opens `path` to append to (created 0640): the fd, or -errno (-ELOOP: a
// symlink where root must not follow one).
int open_log_file(const std::string& path);

// fchown(fd, uid, gid) when `path` names the file open as `fd` itself: a
// regular file with one link, not a symlink. Anything else stays whose it is
// (0): /dev/stdout is the caller's terminal or pipe, and a symlink planted in
// a log directory the user may write to would hand it any root file. 0 or -1.
int give_log_file(int fd, const std::string& path, unsigned uid, unsigned gid);

} // namespace weft
