// The raw context switch (coro/context.hpp): what the Coroutine class stands on.

#include "coro/context.hpp"
#include "coro/stack_pool.hpp"

#include <catch2/catch.hpp>

#include <cfenv>
#include <cstdint>

extern "C" {
std::int64_t weft_test_switch_checked(weft::Context* save, const weft::Context* to,
                                      std::int64_t value, std::uint64_t* seen) noexcept;
std::int64_t weft_test_switch_scrambled(weft::Context* save, const weft::Context* to,
                                        std::int64_t value) noexcept;
}

namespace {

#if defined(__x86_64__)
constexpr int kCalleeSaved = 6; // rbx rbp r12 r13 r14 r15
#else
constexpr int kCalleeSaved = 19; // x19-x29, d8-d15
#endif

// The two sides of each test: the test's own stack and one fresh context.
struct Sides {
    weft::Context main;
    weft::Context other;
    void* arg = nullptr;
    std::uintptr_t local_alignment = 0;
};
Sides sides;

struct StackLease {
    weft::StackPool pool;
    weft::Stack stack = pool.acquire();
    ~StackLease() { pool.release(stack); }
};

[[noreturn]] void echo_plus_one(std::int64_t value, void* arg) {
    sides.arg = arg;
    alignas(16) volatile char local[16] = {};
    sides.local_alignment = reinterpret_cast<std::uintptr_t>(&local[0]) % 16;
    for (;;) value = weft::context_switch(sides.other, sides.main, value + 1);
}

[[noreturn]] void scramble_and_echo(std::int64_t value, void*) {
    for (;;) value = weft_test_switch_scrambled(&sides.other, &sides.main, value);
}

// Answers with the rounding mode it finds, then sets the one it was sent.
[[noreturn]] void swap_rounding(std::int64_t value, void*) {
    for (;;) {
        const int found = std::fegetround();
        std::fesetround(static_cast<int>(value));
        value = weft::context_switch(sides.other, sides.main, found);
    }
}

#if defined(__x86_64__)
struct FpControl {
    std::uint32_t mxcsr;
    std::uint16_t x87;
};
FpControl read_fp_control() {
    FpControl c{};
    asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(c.mxcsr), "=m"(c.x87));
    return c;
}
#endif

} // namespace

TEST_CASE("a fresh context gets the first value, its argument and an aligned stack", "[context]") {
    StackLease lease;
    int marker = 0;
    weft_context_make(&sides.other, lease.stack.top(), echo_plus_one, &marker);
    REQUIRE(weft_context_switch(&sides.main, &sides.other, 41) == 42);
    CHECK(sides.arg == &marker);
    CHECK(sides.local_alignment == 0);
}

TEST_CASE("values pass both ways across a million switches", "[context]") {
    StackLease lease;
    weft_context_make(&sides.other, lease.stack.top(), echo_plus_one, nullptr);
    std::int64_t wrong = 0;
    for (std::int64_t i = -500'000; i < 500'000; ++i) {
        wrong += weft_context_switch(&sides.main, &sides.other, i * 7919) != i * 7919 + 1;
    }
    REQUIRE(wrong == 0);
    // The full 64 bits cross, both ways.
    REQUIRE(weft_context_switch(&sides.main, &sides.other, INT64_MAX - 1) == INT64_MAX);
    REQUIRE(weft_context_switch(&sides.main, &sides.other, INT64_MIN) == INT64_MIN + 1);
}

TEST_CASE("every callee-saved register survives a switch", "[context]") {
    StackLease lease;
    weft_context_make(&sides.other, lease.stack.top(), scramble_and_echo, nullptr);
    for (int round = 0; round < 3; ++round) {
        std::uint64_t seen[kCalleeSaved] = {};
        REQUIRE(weft_test_switch_checked(&sides.main, &sides.other, round, seen) == round);
        for (int i = 0; i < kCalleeSaved; ++i) {
            INFO("register " << i << " of the callee-saved set");
            CHECK(seen[i] == 0x0101010101010101ULL * static_cast<std::uint64_t>(i + 1));
        }
    }
}

TEST_CASE("each context keeps its own FP rounding mode", "[context]") {
    StackLease lease;
    const int saved = std::fegetround();
    REQUIRE(std::fesetround(FE_TOWARDZERO) == 0);
#if defined(__x86_64__)
    const FpControl before = read_fp_control();
#endif
    weft_context_make(&sides.other, lease.stack.top(), swap_rounding, nullptr);

    // A fresh context inherits its maker's mode.
    REQUIRE(weft_context_switch(&sides.main, &sides.other, FE_UPWARD) == FE_TOWARDZERO);
    CHECK(std::fegetround() == FE_TOWARDZERO);
#if defined(__x86_64__)
    // fegetround reads only one of the two control registers: check both.
    const FpControl after = read_fp_control();
    CHECK(after.mxcsr == before.mxcsr);
    CHECK(after.x87 == before.x87);
#endif
    // The other side finds the mode it set, kept while it was away.
    REQUIRE(weft_context_switch(&sides.main, &sides.other, FE_DOWNWARD) == FE_UPWARD);
    CHECK(std::fegetround() == FE_TOWARDZERO);
    REQUIRE(weft_context_switch(&sides.main, &sides.other, FE_TONEAREST) == FE_DOWNWARD);
    std::fesetround(saved);
}
