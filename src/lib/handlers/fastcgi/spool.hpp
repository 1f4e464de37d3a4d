#pragma once
// Spool: bytes that wait between two peers of the fastcgi handler, so a slow
// one never holds a PHP worker: a request body read whole before a backend is
// taken, and a response PHP wrote faster than its client reads.
//
// The first bytes are kept in memory (allocated with the first byte, so a
// request without a body costs nothing), the rest in an unlinked O_TMPFILE
// in $TMPDIR or /tmp. Bytes leave in order: those in the file are older than
// those in memory. A file emptied by take() is truncated, so it only grows
// while a client falls further behind.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace weft::handlers {

class Spool {
public:
    // `memory` bytes in memory, then at most `max_file` bytes in a temp file.
    Spool(std::size_t memory, std::uint64_t max_file) : memory_size_(memory), max_file_(max_file) {}
    ~Spool();
    Spool(const Spool&) = delete;
    Spool& operator=(const Spool&) = delete;

    // Bytes held.
    std::uint64_t size() const { return (file_end_ - file_front_) + (memory_end_ - memory_front_); }
    bool empty() const { return size() == 0; }
    // How many more bytes put() takes.
    std::uint64_t room() const;

    // Appends `bytes`: 0, or -EFBIG past room(), -EIO when the file fails.
    int put(std::string_view bytes);
    // Room for up to `n` bytes at the end, for reading into directly; commit
    // what was written there. Empty when nothing fits (or the file failed).
    char* reserve(std::size_t& n);
    void commit(std::size_t n) { memory_end_ += n; }

    // The oldest bytes held (a view valid until the next call), and how
    // many of them have gone on. Empty with an error from the file.
    std::string_view front();
    void take(std::size_t n);

    // Copies bytes [offset, offset + n) of those held into `out`, leaving
    // them held (a request body is sent again on a retry): 0 or -errno.
    int read(std::uint64_t offset, char* out, std::size_t n) const;

private:
    int spill();
    void allocate();

    std::size_t memory_size_;
    std::uint64_t max_file_;
    std::unique_ptr<char[]> memory_; // memory_size_ bytes, once needed
    std::size_t memory_front_ = 0;
    std::size_t memory_end_ = 0;
    int file_ = -1;
    std::uint64_t file_front_ = 0; // where take() has reached in the file
    std::uint64_t file_end_ = 0;
    // Bytes of the file read for front(): [file_front_, + window_size_).
    std::unique_ptr<char[]> window_;
    std::size_t window_at_ = 0;
    std::size_t window_size_ = 0;
};

} // namespace weft::handlers
