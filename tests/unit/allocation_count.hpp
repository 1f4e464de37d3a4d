#pragma once
// Counts every operator new of a test binary, by replacing it: include this
// in one file of the binary only (a layer's, tests/CMakeLists.txt: every
// test of the layer then allocates through it, as through the default).
// Not in ASan builds (WEFT_ASAN): ASan owns operator new, and clang 14's
// ASan has no working malloc hook to count with.

#include "util/sanitizers.hpp"

#if !WEFT_ASAN

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace test {
inline std::atomic<long> allocations{0};
}

void* operator new(std::size_t size) {
    ++test::allocations;
    if (void* p = std::malloc(size ? size : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

#endif
