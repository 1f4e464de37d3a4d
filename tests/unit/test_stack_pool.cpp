// Stack pool: guard pages, reuse, trimming past the high-water mark.

#include "coro/stack_pool.hpp"

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using weft::Stack;
using weft::StackPool;

namespace {

std::size_t page() {
    return static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// How many pages of the stack are resident, by mincore.
std::size_t resident_pages(const Stack& stack) {
    std::vector<unsigned char> vec(stack.size / page());
    REQUIRE(mincore(stack.base, stack.size, vec.data()) == 0);
    std::size_t n = 0;
    for (unsigned char v : vec) n += v & 1;
    return n;
}

// The permissions /proc/self/maps gives the mapping that holds `addr`.
std::string permissions_at(const void* addr) {
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    std::FILE* maps = std::fopen("/proc/self/maps", "r");
    REQUIRE(maps != nullptr);
    char line[512];
    std::string found;
    while (std::fgets(line, sizeof line, maps)) {
        unsigned long lo = 0, hi = 0;
        char perms[5] = {};
        if (std::sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && lo <= a && a < hi) {
            found = perms;
            break;
        }
    }
    std::fclose(maps);
    return found;
}

} // namespace

TEST_CASE("a stack is writable, page-rounded, with a PROT_NONE guard page below", "[stack]") {
    StackPool pool(StackPool::Options{.stack_size = 10000, .warm_limit = 4, .max_pooled = 4});
    REQUIRE(pool.stack_size() % page() == 0);
    REQUIRE(pool.stack_size() >= 10000);
    Stack stack = pool.acquire();
    REQUIRE(stack);
    std::memset(stack.base, 0xab, stack.size);
    CHECK(permissions_at(stack.base) == "rw-p");
    CHECK(permissions_at(stack.base - 1) == "---p");
    pool.release(stack);
}

TEST_CASE("released stacks are reused, newest first", "[stack]") {
    StackPool pool(StackPool::Options{.stack_size = 16384, .warm_limit = 4, .max_pooled = 4});
    Stack a = pool.acquire();
    Stack b = pool.acquire();
    CHECK(pool.mapped_count() == 2);
    pool.release(a);
    pool.release(b);
    CHECK(pool.acquire().base == b.base);
    CHECK(pool.acquire().base == a.base);
    CHECK(pool.mapped_count() == 2);
    pool.release(a);
    pool.release(b);
}

TEST_CASE("trim() gives back the pages of warm stacks past the high-water mark", "[stack]") {
    StackPool pool(StackPool::Options{.stack_size = 65536, .warm_limit = 2, .max_pooled = 4});
    std::vector<Stack> stacks;
    for (int i = 0; i < 6; ++i) {
        stacks.push_back(pool.acquire());
        std::memset(stacks.back().base, 1, stacks.back().size);
        REQUIRE(resident_pages(stacks.back()) == stacks.back().size / page());
    }
    for (const Stack& s : stacks) pool.release(s);

    // Four are pooled (max_pooled), warm until trimmed; two were unmapped.
    CHECK(pool.warm_count() == 4);
    CHECK(pool.mapped_count() == 4);
    CHECK(permissions_at(stacks[4].base).empty());
    CHECK(resident_pages(stacks[0]) == stacks[0].size / page());

    // Trimming keeps the two newest warm and gives back the rest.
    CHECK(pool.trim() == 2);
    CHECK(pool.trim() == 0);
    CHECK(pool.warm_count() == 2);
    CHECK(pool.trimmed_count() == 2);
    CHECK(resident_pages(stacks[0]) == 0);
    CHECK(resident_pages(stacks[1]) == 0);
    CHECK(resident_pages(stacks[2]) == stacks[2].size / page());
    CHECK(resident_pages(stacks[3]) == stacks[3].size / page());

    // Warm stacks are handed out before trimmed ones; a trimmed one reads as zeros.
    CHECK(pool.acquire().base == stacks[3].base);
    CHECK(pool.acquire().base == stacks[2].base);
    Stack trimmed = pool.acquire();
    CHECK(trimmed.base == stacks[1].base);
    CHECK(trimmed.base[100] == std::byte{0});
    pool.release(trimmed);
    pool.release(stacks[2]);
    pool.release(stacks[3]);
}
