#include "coro/stack_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>

#include "util/sanitizers.hpp"

#if WEFT_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if !defined(NDEBUG) && __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define WEFT_VALGRIND_STACKS 1
#endif

namespace weft {

namespace {

std::size_t page_size() {
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

std::size_t round_up(std::size_t n, std::size_t to) {
    return (n + to - 1) / to * to;
}

// Valgrind must know the stacks it sees sp jump between.
#if WEFT_VALGRIND_STACKS
void register_with_valgrind(Stack& stack) {
    stack.valgrind_id = VALGRIND_STACK_REGISTER(stack.base, stack.top());
}
void deregister_with_valgrind(const Stack& stack) {
    VALGRIND_STACK_DEREGISTER(stack.valgrind_id);
}
#else
void register_with_valgrind(Stack&) {}
void deregister_with_valgrind(const Stack&) {}
#endif

} // namespace

StackPool::StackPool() : StackPool(Options{}) {}

StackPool::StackPool(Options options) : options_(options), guard_size_(page_size()) {
    options_.stack_size = round_up(options_.stack_size, page_size());
    assert(options_.stack_size >= 2 * page_size());
}

StackPool::~StackPool() {
    for (Stack stack : warm_) unmap_stack(stack);
    for (Stack stack : trimmed_) unmap_stack(stack);
    assert(mapped_ == 0 && "a stack outlived its pool");
}

StackPool& StackPool::this_thread() {
    thread_local StackPool pool;
    return pool;
}

Stack StackPool::acquire() {
    if (!warm_.empty()) {
        Stack stack = warm_.back();
        warm_.pop_back();
        return stack;
    }
    if (!trimmed_.empty()) {
        Stack stack = trimmed_.back();
        trimmed_.pop_back();
        return stack;
    }
    return map_stack();
}

void StackPool::release(Stack stack) {
    assert(stack && stack.size == options_.stack_size);
#if WEFT_ASAN
    // Frames abandoned by a switch leave their redzones poisoned.
    ASAN_UNPOISON_MEMORY_REGION(stack.base, stack.size);
#endif
    if (warm_.size() + trimmed_.size() < std::max(options_.max_pooled, options_.warm_limit)) {
        warm_.push_back(stack);
        return;
    }
    unmap_stack(stack);
}

std::size_t StackPool::trim() {
    if (warm_.size() <= options_.warm_limit) return 0;
    // The oldest warm ones: the newest stay cache-warm for reuse.
    const std::size_t excess = warm_.size() - options_.warm_limit;
    for (std::size_t i = 0; i < excess; ++i) {
        madvise(warm_[i].base, warm_[i].size, MADV_DONTNEED);
        trimmed_.push_back(warm_[i]);
    }
    warm_.erase(warm_.begin(), warm_.begin() + static_cast<std::ptrdiff_t>(excess));
    return excess;
}

Stack StackPool::map_stack() {
    const std::size_t total = guard_size_ + options_.stack_size;
    void* region =
        mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) return {};
    auto* base = static_cast<std::byte*>(region) + guard_size_;
    if (mprotect(base, options_.stack_size, PROT_READ | PROT_WRITE) != 0) {
        const int saved = errno;
        munmap(region, total);
        errno = saved;
        return {};
    }
    Stack stack{base, options_.stack_size};
    register_with_valgrind(stack);
    ++mapped_;
    return stack;
}

void StackPool::unmap_stack(Stack stack) {
    deregister_with_valgrind(stack);
    munmap(stack.base - guard_size_, guard_size_ + stack.size);
    --mapped_;
}

} // namespace weft
