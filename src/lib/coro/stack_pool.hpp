#pragma once
// Coroutine stacks: mmap'd, with a PROT_NONE guard page below, pooled per
// thread.
//
// A pool keeps released stacks for reuse, warm (pages resident: a reused one
// costs no page fault). trim() -- the loop calls it when it goes idle -- cuts
// the warm ones down to the high-water mark `warm_limit` with
// madvise(MADV_DONTNEED): their memory goes back to the kernel, the mapping
// stays for reuse. Trimming when idle rather than at each release keeps a
// syscall and the page faults after it off the path of a busy server. Past
// `max_pooled` pooled stacks, released ones are unmapped. Each stack costs two kernel mappings
// (guard and body), so vm.max_map_count (65530 by default) bounds how many can exist at once.

#include "util/sanitizers.hpp"

#include <cstddef>
#include <vector>

namespace weft {

// The usable part of a stack: [base, base + size). The guard page lies just
// below base.
struct Stack {
    std::byte* base = nullptr;
    std::size_t size = 0;
    unsigned valgrind_id = 0; // debug builds run under valgrind register stacks

    std::byte* top() const { return base + size; }
    explicit operator bool() const { return base != nullptr; }
};

class StackPool {
public:
    struct Options {
        // 64 KiB: a handler's frames plus what libc needs underneath it
        // (formatted output and name resolution each take a few KiB), with
        // room to spare. Only touched pages are resident, so an ordinary
        // request costs a few pages. Sanitizer builds need bigger frames.
#if WEFT_ASAN
        std::size_t stack_size = 256 * 1024;
#else
        std::size_t stack_size = 64 * 1024;
#endif
        std::size_t warm_limit = 64;
        std::size_t max_pooled = 4096;
    };

    StackPool();
    explicit StackPool(Options options);
    ~StackPool();
    StackPool(const StackPool&) = delete;
    StackPool& operator=(const StackPool&) = delete;

    // The calling thread's pool, with default options.
    static StackPool& this_thread();

    // A stack from the pool, or a new mapping; an empty Stack with errno set
    // when the kernel refuses.
    Stack acquire();
    // Gives a stack back; it must come from this pool's acquire().
    void release(Stack stack);
    // Trims warm stacks past the high-water mark; returns how many.
    std::size_t trim();

    std::size_t stack_size() const {
        return options_.stack_size;
    }
    std::size_t warm_count() const {
        return warm_.size();
    }
    std::size_t trimmed_count() const {
        return trimmed_.size();
    }
    // Stacks mapped by this pool and not yet unmapped, in use or pooled.
    std::size_t mapped_count() const {
        return mapped_;
    }

private:
    Stack map_stack();
    void unmap_stack(Stack stack);

    Options options_;
    std::size_t guard_size_;
    std::size_t mapped_ = 0;
    std::vector<Stack> warm_;
    std::vector<Stack> trimmed_;
};

} // namespace weft
