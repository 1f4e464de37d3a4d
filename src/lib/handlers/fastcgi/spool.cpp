#include "handlers/fastcgi/spool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft::handlers {

namespace {

// Bytes of the file read at a time for front().
constexpr std::size_t kWindow = 32 * 1024;

} // namespace

Spool::~Spool() {
    if (file_ >= 0) ::close(file_);
}

std::uint64_t Spool::room() const {
    const std::size_t in_memory = memory_end_ - memory_front_;
    const std::uint64_t file = max_file_ - std::min(max_file_, file_end_);
    const std::uint64_t memory = memory_size_ - in_memory;
    return file > ~std::uint64_t{0} - memory ? ~std::uint64_t{0} : file + memory;
}

void Spool::allocate() {
    if (!memory_) memory_ = std::make_unique_for_overwrite<char[]>(memory_size_);
}

int Spool::put(std::string_view bytes) {
    if (bytes.size() > room()) return -EFBIG;
    while (!bytes.empty()) {
        std::size_t n = bytes.size();
        char* into = reserve(n);
        if (!into) return -EIO;
        std::memcpy(into, bytes.data(), n);
        commit(n);
        bytes.remove_prefix(n);
    }
    return 0;
}

char* Spool::reserve(std::size_t& n) {
    allocate();
    if (memory_end_ == memory_size_) {
        if (file_front_ == file_end_ && memory_front_ > 0) {
            // Nothing older in the file: the memory's free front is room.
            std::memmove(memory_.get(), memory_.get() + memory_front_, memory_end_ - memory_front_);
            memory_end_ -= memory_front_;
            memory_front_ = 0;
        } else if (spill() < 0) {
            n = 0;
            return nullptr;
        }
    }
    n = std::min(n, memory_size_ - memory_end_);
    return n ? memory_.get() + memory_end_ : nullptr;
}

// Moves the oldest bytes in memory to the end of the file (as many as it
// may still take), and the rest to the memory's front.
int Spool::spill() {
    if (file_ < 0) {
        const char* dir = std::getenv("TMPDIR");
        file_ = ::open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (file_ < 0) {
            std::fprintf(stderr, "weft: fastcgi: no temp file to spool to: %s\n",
                         std::strerror(errno));
            return -EIO;
        }
    }
    const std::size_t count =
        std::min<std::uint64_t>(memory_end_ - memory_front_, max_file_ - file_end_);
    if (count == 0) return -EFBIG;
    for (std::size_t done = 0; done < count;) {
        const ssize_t n = ::pwrite(file_, memory_.get() + memory_front_ + done, count - done,
                                   static_cast<off_t>(file_end_ + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            std::fprintf(stderr, "weft: fastcgi: writing a temp file failed: %s\n",
                         n < 0 ? std::strerror(errno) : "no space");
            return -EIO;
        }
        done += static_cast<std::size_t>(n);
    }
    file_end_ += count;
    memory_front_ += count;
    std::memmove(memory_.get(), memory_.get() + memory_front_, memory_end_ - memory_front_);
    memory_end_ -= memory_front_;
    memory_front_ = 0;
    return 0;
}

std::string_view Spool::front() {
    if (file_front_ == file_end_) {
        return {memory_.get() + memory_front_, memory_end_ - memory_front_};
    }
    if (window_at_ == window_size_) {
        if (!window_) window_ = std::make_unique_for_overwrite<char[]>(kWindow);
        const std::size_t want = std::min<std::uint64_t>(kWindow, file_end_ - file_front_);
        ssize_t n;
        do {
            n = ::pread(file_, window_.get(), want, static_cast<off_t>(file_front_));
        } while (n < 0 && errno == EINTR);
        if (n <= 0) return {};
        window_at_ = 0;
        window_size_ = static_cast<std::size_t>(n);
    }
    return {window_.get() + window_at_, window_size_ - window_at_};
}

void Spool::take(std::size_t n) {
    if (file_front_ == file_end_) {
        memory_front_ += n;
        if (memory_front_ == memory_end_) memory_front_ = memory_end_ = 0;
        return;
    }
    file_front_ += n;
    window_at_ += n;
    if (file_front_ == file_end_) {
        // Emptied: the disk space goes back at once.
        if (::ftruncate(file_, 0) == 0) file_front_ = file_end_ = 0;
        window_at_ = window_size_ = 0;
    }
}

int Spool::read(std::uint64_t offset, char* out, std::size_t n) const {
    // Nothing was taken: the file holds [0, file_end_), the memory the rest.
    while (n && offset < file_end_) {
        const std::size_t want = std::min<std::uint64_t>(n, file_end_ - offset);
        const ssize_t got = ::pread(file_, out, want, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return got < 0 ? -errno : -EIO;
        out += got;
        offset += static_cast<std::uint64_t>(got);
        n -= static_cast<std::size_t>(got);
    }
    if (n) std::memcpy(out, memory_.get() + memory_front_ + (offset - file_end_), n);
    return 0;
}

} // namespace weft::handlers
