// Coroutines: resume/yield, defer, ending, destruction, stack limits.

#include "coro/coroutine.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cfenv>
#include <csignal>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using weft::Coroutine;
using weft::CoroutinePtr;

namespace {

// Resident set size of this process, in bytes.
std::size_t rss_bytes() {
    long pages_total = 0, pages_resident = 0;
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    REQUIRE(f != nullptr);
    REQUIRE(std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) == 2);
    std::fclose(f);
    return static_cast<std::size_t>(pages_resident) *
           static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Recursion the compiler cannot flatten: each frame is live across the call.
// Records the lowest frame address reached.
std::uintptr_t lowest_frame = UINTPTR_MAX;
[[gnu::noinline]] std::uint64_t recurse(std::uint64_t depth) {
    volatile unsigned char frame[256];
    frame[0] = static_cast<unsigned char>(depth);
    asm volatile("" : : "r"(frame) : "memory");
    if (reinterpret_cast<std::uintptr_t>(frame) < lowest_frame)
        lowest_frame = reinterpret_cast<std::uintptr_t>(frame);
    if (depth == 0) return frame[0];
    return recurse(depth - 1) + frame[0];
}

} // namespace

TEST_CASE("values pass both ways across a million resume/yield round trips", "[coro]") {
    auto co = Coroutine::create([](std::int64_t value) {
        for (;;) value = weft::yield(value * 2 + 1);
    });
    REQUIRE(co);
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < 1'000'000; ++i) wrong += co->resume(i) != i * 2 + 1;
    REQUIRE(wrong == 0);
    CHECK(co->state() == Coroutine::State::suspended);
}

namespace {

// Puts garbage in every register a switch declares clobbered, as any code
// on the other side of a switch may.
void scramble_registers() {
#if defined(__x86_64__)
    asm volatile("movq $-1, %%rax\n\t"
                 "movq %%rax, %%rbx\n\tmovq %%rax, %%rcx\n\tmovq %%rax, %%rdx\n\t"
                 "movq %%rax, %%rsi\n\tmovq %%rax, %%rdi\n\tmovq %%rax, %%r8\n\t"
                 "movq %%rax, %%r9\n\tmovq %%rax, %%r10\n\tmovq %%rax, %%r11\n\t"
                 "movq %%rax, %%r12\n\tmovq %%rax, %%r13\n\tmovq %%rax, %%r14\n\t"
                 "movq %%rax, %%r15\n\t"
                 "pcmpeqd %%xmm0, %%xmm0\n\t"
                 "movdqa %%xmm0, %%xmm1\n\tmovdqa %%xmm0, %%xmm2\n\tmovdqa %%xmm0, %%xmm3\n\t"
                 "movdqa %%xmm0, %%xmm4\n\tmovdqa %%xmm0, %%xmm5\n\tmovdqa %%xmm0, %%xmm6\n\t"
                 "movdqa %%xmm0, %%xmm7\n\tmovdqa %%xmm0, %%xmm8\n\tmovdqa %%xmm0, %%xmm9\n\t"
                 "movdqa %%xmm0, %%xmm10\n\tmovdqa %%xmm0, %%xmm11\n\tmovdqa %%xmm0, %%xmm12\n\t"
                 "movdqa %%xmm0, %%xmm13\n\tmovdqa %%xmm0, %%xmm14\n\tmovdqa %%xmm0, %%xmm15"
                 :
                 :
                 : "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
                   "r14", "r15", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                   "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory");
#else
    asm volatile("mov x9, #-1\n\t"
                 "mov x3, x9\n\tmov x4, x9\n\tmov x5, x9\n\tmov x6, x9\n\tmov x7, x9\n\t"
                 "mov x8, x9\n\tmov x10, x9\n\tmov x11, x9\n\tmov x12, x9\n\tmov x13, x9\n\t"
                 "mov x14, x9\n\tmov x15, x9\n\tmov x16, x9\n\tmov x17, x9\n\tmov x19, x9\n\t"
                 "mov x20, x9\n\tmov x21, x9\n\tmov x22, x9\n\tmov x23, x9\n\tmov x24, x9\n\t"
                 "mov x25, x9\n\tmov x26, x9\n\tmov x27, x9\n\tmov x28, x9\n\t"
                 "movi v0.2d, #-1\n\tmovi v1.2d, #-1\n\tmovi v2.2d, #-1\n\tmovi v3.2d, #-1\n\t"
                 "movi v4.2d, #-1\n\tmovi v5.2d, #-1\n\tmovi v6.2d, #-1\n\tmovi v7.2d, #-1\n\t"
                 "movi v8.2d, #-1\n\tmovi v9.2d, #-1\n\tmovi v10.2d, #-1\n\tmovi v11.2d, #-1\n\t"
                 "movi v12.2d, #-1\n\tmovi v13.2d, #-1\n\tmovi v14.2d, #-1\n\tmovi v15.2d, #-1\n\t"
                 "movi v16.2d, #-1\n\tmovi v17.2d, #-1\n\tmovi v18.2d, #-1\n\tmovi v19.2d, #-1\n\t"
                 "movi v20.2d, #-1\n\tmovi v21.2d, #-1\n\tmovi v22.2d, #-1\n\tmovi v23.2d, #-1\n\t"
                 "movi v24.2d, #-1\n\tmovi v25.2d, #-1\n\tmovi v26.2d, #-1\n\tmovi v27.2d, #-1\n\t"
                 "movi v28.2d, #-1\n\tmovi v29.2d, #-1\n\tmovi v30.2d, #-1\n\tmovi v31.2d, #-1"
                 :
                 :
                 : "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
                   "x15", "x16", "x17", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
                   "x27", "x28", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10",
                   "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21",
                   "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "memory");
#endif
}

} // namespace

TEST_CASE("values the compiler keeps live across resume and yield survive them", "[coro]") {
    // The switch is inline assembly: the compiler may keep a value in any
    // register it was not told is clobbered. The other side scrambles them.
    auto scrambler = Coroutine::create([](std::int64_t v) {
        for (;;) {
            scramble_registers();
            v = weft::yield(v + 1);
        }
    });
    std::int64_t seed = 3;
    auto keeper = Coroutine::create([&](std::int64_t v) {
        double d[12];
        std::int64_t n[12];
        for (int k = 0; k < 12; ++k) {
            d[k] = static_cast<double>(v + k) + 0.5; // sums stay exact
            n[k] = v * 7919 + k;
        }
        long double x = static_cast<long double>(v) + 0.25L;
        for (int round = 0; round < 100; ++round) {
            v = weft::yield(v);
            for (int k = 0; k < 12; ++k) {
                d[k] += 1.0;
                n[k] += 1;
            }
            x += 1.0L;
        }
        std::int64_t wrong = 0;
        for (int k = 0; k < 12; ++k) {
            wrong += d[k] != static_cast<double>(seed + k) + 100.5;
            wrong += n[k] != seed * 7919 + k + 100;
        }
        wrong += x != static_cast<long double>(seed) + 100.25L;
        return wrong;
    });
    std::int64_t value = keeper->resume(seed);
    int rounds = 0;
    while (!keeper->finished()) {
        // The scrambler runs between each yield of the keeper and its next
        // resume, and scrambles this side too before returning here.
        REQUIRE(scrambler->resume(value) == value + 1);
        scramble_registers();
        value = keeper->resume(value);
        ++rounds;
    }
    CHECK(rounds == 100);
    CHECK(value == 0); // no value the keeper kept came back changed
}

TEST_CASE("a body's return value is what the last resume returns", "[coro]") {
    auto co = Coroutine::create([] {
        weft::yield(1);
        return 99;
    });
    CHECK(co->state() == Coroutine::State::created);
    CHECK(co->resume() == 1);
    CHECK(co->resume() == 99);
    CHECK(co->finished());

    auto plain = Coroutine::create([] {});
    CHECK(plain->resume() == 0);
    CHECK(plain->finished());
}

TEST_CASE("current() names the running coroutine, and ids are unique", "[coro]") {
    CHECK(Coroutine::current() == nullptr);
    Coroutine* seen = nullptr;
    auto co = Coroutine::create([&] { seen = Coroutine::current(); });
    co->resume();
    CHECK(seen == co.get());
    CHECK(Coroutine::current() == nullptr);

    std::set<Coroutine::Id> ids;
    std::vector<CoroutinePtr> many;
    for (int i = 0; i < 1000; ++i) {
        many.push_back(Coroutine::create([] {}));
        ids.insert(many.back()->id());
    }
    CHECK(ids.size() == 1000);
}

TEST_CASE("a coroutine can resume another", "[coro]") {
    std::string trace;
    auto inner = Coroutine::create([&](std::int64_t v) {
        trace += "i" + std::to_string(v);
        v = weft::yield(v + 1);
        trace += "i" + std::to_string(v);
        return v + 1;
    });
    auto outer = Coroutine::create([&](std::int64_t v) {
        trace += "o" + std::to_string(v);
        const std::int64_t a = inner->resume(v + 1);
        CHECK(Coroutine::current()->id() != inner->id());
        trace += "o" + std::to_string(a);
        v = weft::yield(a + 1);
        const std::int64_t b = inner->resume(v + 1);
        trace += "o" + std::to_string(b);
        return b + 1;
    });
    CHECK(outer->resume(1) == 4);
    CHECK(Coroutine::current() == nullptr);
    CHECK(outer->resume(10) == 13);
    CHECK(trace == "o1i2o3i11o12");
    CHECK(inner->finished());
    CHECK(outer->finished());
}

TEST_CASE("deferred calls run last-in first-out, and disarmed ones not at all", "[coro]") {
    std::string order;
    auto co = Coroutine::create([&] {
        auto* self = Coroutine::current();
        self->defer([&order] { order += 'a'; });
        const weft::DeferId b = self->defer([&order] { order += 'b'; });
        self->defer([](void* o) { *static_cast<std::string*>(o) += 'c'; }, &order);
        for (int i = 0; i < 10; ++i)
            self->defer([&order] { order += '.'; }); // past the inline ones
        self->disarm(b);
        weft::yield();
        order += '|';
    });
    co->resume();
    CHECK(order.empty());
    co->resume();
    CHECK(order == "|..........ca");
}

TEST_CASE("a deferred call may defer another", "[coro]") {
    std::string order;
    auto co = Coroutine::create([&] {
        auto* self = Coroutine::current();
        self->defer([&order] { order += 'a'; });
        self->defer([self, &order] {
            order += 'b';
            self->defer([&order] { order += 'c'; });
        });
    });
    co->resume();
    CHECK(order == "bca");
}

TEST_CASE("destroying a suspended coroutine unwinds its stack, then runs its defers", "[coro]") {
    std::string order;
    struct Guard {
        std::string& order;
        ~Guard() {
            order += 'd';
            // A yield while unwinding does not switch away.
            if (weft::yield(5) == Coroutine::kCancelled) order += 'k';
        }
    };
    auto co = Coroutine::create([&] {
        Coroutine::current()->defer([&order] { order += 'f'; });
        Guard guard{order};
        std::vector<int> heap(1000, 1); // freed by the unwinding, or LSan notices
        try {
            weft::yield(1);
        } catch (const std::exception&) {
            order += "wrong"; // the unwinding is no std::exception
        }
        order += "never";
    });
    REQUIRE(co->resume() == 1);
    co.reset();
    CHECK(order == "dkf");
}

TEST_CASE("a body that swallows the unwinding is unwound again at its next yield", "[coro]") {
    int caught = 0;
    bool ended = false;
    auto co = Coroutine::create([&] {
        Coroutine::current()->defer([&ended] { ended = true; });
        for (int i = 0; i < 3; ++i) {
            try {
                weft::yield();
            } catch (...) {
                ++caught; // wrong, but must not hang the destroyer
            }
        }
        weft::yield();
    });
    co->resume();
    co.reset();
    CHECK(caught == 3);
    CHECK(ended);
}

TEST_CASE("destroying a coroutine that never ran destroys its body and runs its defers", "[coro]") {
    int destroyed = 0;
    struct Counted {
        int* destroyed;
        bool live = true;
        Counted(int* d) : destroyed(d) {}
        Counted(Counted&& o) noexcept : destroyed(o.destroyed) { o.live = false; }
        ~Counted() { *destroyed += live; }
    };
    {
        auto co = Coroutine::create([c = Counted(&destroyed)] { (void)c; });
        CHECK(destroyed == 0);
        bool deferred = false;
        co->defer([&deferred] { deferred = true; });
        co.reset();
        CHECK(deferred);
    }
    CHECK(destroyed == 1);
    {
        auto co = Coroutine::create([c = Counted(&destroyed)] { (void)c; });
        co->resume();
        CHECK(destroyed == 2); // destroyed when the body ended, not later
    }
    CHECK(destroyed == 2);
}

TEST_CASE("an exception thrown inside a coroutine ends only that coroutine", "[coro]") {
    bool deferred = false;
    auto bad = Coroutine::create([&] {
        Coroutine::current()->defer([&deferred] { deferred = true; });
        weft::yield(7);
        throw std::runtime_error("expected by the test: this coroutine ends here");
    });
    auto good = Coroutine::create([](std::int64_t v) {
        for (;;) v = weft::yield(v + 1);
    });
    CHECK(bad->resume() == 7);
    CHECK(good->resume(1) == 2);
    std::int64_t result = 0;
    REQUIRE_NOTHROW(result = bad->resume());
    CHECK(result == Coroutine::kFailed);
    CHECK(bad->finished());
    CHECK(deferred);
    CHECK(good->resume(2) == 3);
}

TEST_CASE("each coroutine has its own caught exceptions", "[coro]") {
    // Both suspend inside a catch block; the first to leave its handler must
    // not free the other's exception.
    std::string a_saw, b_saw;
    auto body = [](std::string name, std::string* saw) {
        return [name, saw] {
            try {
                throw std::runtime_error(name);
            } catch (const std::exception&) {
                weft::yield();
                try {
                    throw; // rethrows this coroutine's own exception
                } catch (const std::exception& again) {
                    *saw = again.what();
                }
            }
        };
    };
    auto a = Coroutine::create(body("from a", &a_saw));
    auto b = Coroutine::create(body("from b", &b_saw));
    a->resume();
    b->resume();
    a->resume(); // a's handler ends: frees a's exception only
    b->resume();
    CHECK(a_saw == "from a");
    CHECK(b_saw == "from b");
    CHECK(std::uncaught_exceptions() == 0);
}

TEST_CASE("a coroutine resumed inside a catch block neither sees nor frees the resumer's exception",
          "[coro]") {
    // On a thread of its own: its first resume is also the first time the
    // thread's exception state is looked up.
    std::string inside, outside_before, outside_after;
    std::thread([&] {
        auto co = Coroutine::create([&] {
            inside = std::current_exception() ? "sees one" : "sees none";
            try {
                throw std::runtime_error("inner");
            } catch (const std::exception& e) {
                weft::yield();
                inside += std::string(", then ") + e.what();
            }
        });
        try {
            throw std::runtime_error("outer");
        } catch (const std::exception& e) {
            outside_before = e.what();
            co->resume(); // suspends inside its own catch block
            co->resume(); // leaves it: frees "inner" only
            try {
                throw; // the resumer's own exception, still there
            } catch (const std::exception& again) {
                outside_after = again.what();
            }
        }
    }).join();
    CHECK(inside == "sees none, then inner");
    CHECK(outside_before == "outer");
    CHECK(outside_after == "outer");
}

TEST_CASE("a coroutine destroyed while its destroyer unwinds is still unwound", "[coro]") {
    bool unwound = false;
    bool continued = false;
    auto co = Coroutine::create([&] {
        struct Guard {
            bool* flag;
            ~Guard() { *flag = true; }
        } guard{&unwound};
        weft::yield();
        continued = true;
    });
    co->resume();
    try {
        struct DestroyOnUnwind {
            CoroutinePtr* co;
            ~DestroyOnUnwind() { co->reset(); } // runs while an exception propagates
        } destroyer{&co};
        throw std::runtime_error("expected by the test");
    } catch (const std::exception&) {
    }
    CHECK(unwound);
    CHECK_FALSE(continued);
}

TEST_CASE("each coroutine keeps its own FP rounding mode", "[coro]") {
    const int saved = std::fegetround();
    std::fesetround(FE_TOWARDZERO);
    auto co = Coroutine::create([] {
        std::fesetround(FE_UPWARD);
        weft::yield(std::fegetround());
        return std::fegetround();
    });
    CHECK(co->resume() == FE_UPWARD);
    CHECK(std::fegetround() == FE_TOWARDZERO);
    CHECK(co->resume() == FE_UPWARD);
    CHECK(std::fegetround() == FE_TOWARDZERO);
    std::fesetround(saved);
}

TEST_CASE("deep recursion can use most of the stack", "[coro]") {
    weft::StackPool pool;
    std::uint64_t sum = 0;
    std::uintptr_t start = 0;
    auto co = Coroutine::create(
        [&] {
            volatile char here = 0;
            start = reinterpret_cast<std::uintptr_t>(&here);
            // Measure one frame, then recurse to about 85% of what is left.
            lowest_frame = UINTPTR_MAX;
            recurse(1);
            const std::uintptr_t two = lowest_frame;
            lowest_frame = UINTPTR_MAX;
            recurse(0);
            const std::uintptr_t frame = lowest_frame - two;
            const std::uintptr_t room =
                start - reinterpret_cast<std::uintptr_t>(Coroutine::current()->stack().base);
            const std::uint64_t depth = room * 85 / 100 / frame;
            lowest_frame = UINTPTR_MAX;
            sum = recurse(depth);
            return static_cast<std::int64_t>(depth);
        },
        pool);
    const std::int64_t depth = co->resume();
    REQUIRE(co->finished());
    const auto base = reinterpret_cast<std::uintptr_t>(co->stack().base);
    const double used = double(start - lowest_frame) / double(pool.stack_size());
    INFO("depth " << depth << ", used " << used * 100 << "% of the stack");
    CHECK(lowest_frame > base);
    CHECK(used > 0.80);
    std::uint64_t expected = 0;
    for (std::int64_t d = 0; d <= depth; ++d) expected += static_cast<unsigned char>(d);
    CHECK(sum == expected);
}

TEST_CASE("a stack overflow hits the guard page and dies by SIGSEGV", "[coro]") {
    std::fflush(nullptr);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // Sanitizers catch SIGSEGV to report; the test wants the plain signal.
        std::signal(SIGSEGV, SIG_DFL);
        auto co = Coroutine::create([] { return static_cast<std::int64_t>(recurse(UINT64_MAX)); });
        co->resume();
        _exit(0); // not reached if the guard page works
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGSEGV);
}

TEST_CASE("100,000 coroutines created and destroyed keep the RSS bounded", "[coro]") {
    // The pool keeps every stack mapped (64 warm, the rest trimmed): the steady
    // state of a server. Unmapping past max_pooled is tested with the pool;
    // here it would only measure qemu-user, whose bookkeeping of guest
    // mappings grows with every munmap and mmap.
    constexpr int kBatch = 10'000;
    weft::StackPool pool(weft::StackPool::Options{.warm_limit = 64, .max_pooled = kBatch});
    constexpr int kBatches = 10;
    // One vector for all batches, and no assertion inside the loop: the test
    // itself must not allocate per coroutine (ASan keeps freed memory around).
    std::vector<CoroutinePtr> live;
    live.reserve(kBatch);
    int failed = 0;
    auto run_batch = [&] {
        for (int i = 0; i < kBatch; ++i) {
            live.push_back(Coroutine::create(
                [](std::int64_t v) {
                    volatile char touch[2048];
                    touch[0] = static_cast<char>(v);
                    weft::yield(touch[0]);
                },
                pool));
            if (live.back()) {
                live.back()->resume(i);
            } else {
                ++failed;
            }
        }
        live.clear();
        pool.trim(); // as the loop does when it goes idle
    };
    const std::size_t before = rss_bytes();
    run_batch();
    const std::size_t after_first = rss_bytes();
    for (int b = 1; b < kBatches; ++b) run_batch();
    const std::size_t after_all = rss_bytes();
    REQUIRE(failed == 0);
    CHECK(pool.warm_count() <= 64);
    CHECK(pool.mapped_count() == kBatch);
    INFO("RSS before " << before / 1024 << " KiB, after the first batch " << after_first / 1024
                       << " KiB, after all " << after_all / 1024 << " KiB");
#if !WEFT_ASAN
    // ASan keeps freed memory in quarantine (each destruction here throws the
    // unwinding exception) and the stacks' shadow resident: RSS means nothing
    // there, and LSan checks for leaks instead.
    //
    // Trimmed stacks gave their pages back: later batches reuse, never add,
    CHECK(after_all < after_first + 1024 * 1024);
    // and what 10,000 live coroutines touched went back to the kernel.
    CHECK(after_all < before + 8 * 1024 * 1024);
#endif
}
