// Cost of one coroutine round trip (resume + yield) on weft's context switch,
// against glibc's swapcontext measured in the same run.
//
//   coro_switch [--iterations N] [--runs R]
//
// Each figure is the median over R runs of N round trips. The last line is
// machine-readable: result round_trip_ns=N swapcontext_ns=N ratio=N

#include "coro/coroutine.hpp"

#include <ucontext.h>

#include "stats.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double ns_per_iteration(long iterations, F&& run) {
    const auto start = Clock::now();
    run(iterations);
    const auto end = Clock::now();
    return std::chrono::duration<double, std::nano>(end - start).count() / double(iterations);
}

// weft: resume() into a coroutine that yields straight back.
double weft_round_trip(long iterations) {
    auto co = weft::Coroutine::create([](std::int64_t v) {
        for (;;) v = weft::yield(v + 1);
    });
    std::int64_t sum = 0;
    const double ns = ns_per_iteration(iterations, [&](long n) {
        for (long i = 0; i < n; ++i) sum += co->resume(i);
    });
    if (sum != iterations * (iterations + 1) / 2) std::abort();
    return ns;
}

// The bare switch, without the Coroutine bookkeeping.
void* raw_main;
void* raw_other;
[[noreturn]] void raw_echo(std::int64_t v, void*) {
    for (;;) v = weft_context_switch(&raw_other, raw_main, v + 1);
}
double raw_round_trip(long iterations) {
    weft::StackPool pool;
    weft::Stack stack = pool.acquire();
    raw_other = weft_context_make(stack.top(), raw_echo, nullptr);
    std::int64_t sum = 0;
    const double ns = ns_per_iteration(iterations, [&](long n) {
        for (long i = 0; i < n; ++i) sum += weft_context_switch(&raw_main, raw_other, i);
    });
    pool.release(stack);
    if (sum != iterations * (iterations + 1) / 2) std::abort();
    return ns;
}

// glibc: swapcontext there and back.
ucontext_t uc_main;
ucontext_t uc_other;
volatile long uc_count;
void uc_echo() {
    for (;;) {
        uc_count = uc_count + 1;
        swapcontext(&uc_other, &uc_main);
    }
}
double swapcontext_round_trip(long iterations) {
    std::vector<char> stack(64 * 1024);
    getcontext(&uc_other);
    uc_other.uc_stack.ss_sp = stack.data();
    uc_other.uc_stack.ss_size = stack.size();
    uc_other.uc_link = nullptr;
    makecontext(&uc_other, uc_echo, 0);
    uc_count = 0;
    const double ns = ns_per_iteration(iterations, [](long n) {
        for (long i = 0; i < n; ++i) swapcontext(&uc_main, &uc_other);
    });
    if (uc_count != iterations) std::abort();
    return ns;
}

} // namespace

int main(int argc, char** argv) {
    long iterations = 10'000'000;
    long runs = 7;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            iterations = bench::positive(argv[++i], "--iterations");
        } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = bench::positive(argv[++i], "--runs");
        } else {
            std::fprintf(stderr, "usage: coro_switch [--iterations N] [--runs R]\n");
            return 2;
        }
    }
    // swapcontext makes a sigprocmask syscall per call: fewer iterations do.
    const long uc_iterations = std::max(1L, iterations / 20);

    std::vector<double> weft_ns, raw_ns, uc_ns;
    weft_round_trip(iterations / 10 + 1); // warm the pool and the caches
    for (long r = 0; r < runs; ++r) {
        weft_ns.push_back(weft_round_trip(iterations));
        raw_ns.push_back(raw_round_trip(iterations));
        uc_ns.push_back(swapcontext_round_trip(uc_iterations));
    }
    const double weft = bench::median(weft_ns), raw = bench::median(raw_ns),
                 uc = bench::median(uc_ns);
    std::printf("round trip = resume + yield, median of %ld runs\n", runs);
    std::printf("  weft Coroutine   %8.2f ns  (%ld round trips per run)\n", weft, iterations);
    std::printf("  weft raw switch  %8.2f ns\n", raw);
    std::printf("  glibc swapcontext%8.2f ns  (%ld round trips per run)\n", uc, uc_iterations);
    std::printf("result round_trip_ns=%.2f swapcontext_ns=%.2f ratio=%.1f\n", weft, uc, uc / weft);
    return 0;
}
