#include "loop/fd_table.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft {

FdTable::FdTable(std::size_t size) : size_(size) {
    if (size_ == 0) {
        rlimit limit{};
        getrlimit(RLIMIT_NOFILE, &limit);
        size_ =
            limit.rlim_cur == RLIM_INFINITY ? 1u << 20 : static_cast<std::size_t>(limit.rlim_cur);
    }
    void* memory = mmap(nullptr, size_ * sizeof(FdEntry), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
        std::fprintf(stderr, "weft: cannot map a table for %zu fds\n", size_);
        std::abort();
    }
    entries_ = static_cast<FdEntry*>(memory);
    memory = mmap(nullptr, size_ * sizeof(SocketEnds), PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) {
        std::fprintf(stderr, "weft: cannot map a table for %zu fds\n", size_);
        std::abort();
    }
    ends_ = static_cast<SocketEnds*>(memory);
}

FdTable::~FdTable() {
    munmap(entries_, size_ * sizeof(FdEntry));
    munmap(ends_, size_ * sizeof(SocketEnds));
}

void FdTable::reset(int fd) {
    assert(fits(fd) && !entries_[fd].timer.armed());
    std::memset(static_cast<void*>(&entries_[fd]), 0, sizeof(FdEntry));
}

} // namespace weft
