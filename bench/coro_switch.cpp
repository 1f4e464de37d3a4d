// Cost of one coroutine round trip (resume + yield) on weft's context switch,
// against Boost.Context's jump_fcontext (the anchor, when the build found
// it) and glibc's swapcontext, measured in the same run on the same core.
//
//   coro_switch [--iterations N] [--runs R] [--only weft|raw|boost|swapcontext]
//
// A round trip jumps into a context that jumps straight back, passing a
// value each way. Each figure is the median over R runs of N round trips;
// the runs interleave the contenders, so a noisy minute hits them all. The
// process pins itself to the CPU it starts on (choose it with taskset).
// --only runs just one contender's loop: for counting its instructions under
// callgrind (see bench/README.md).
//
// The last line is machine-readable:
//   result round_trip_ns=N raw_switch_ns=N boost_ns=N weft_boost=N
//          raw_boost=N swapcontext_ns=N ratio=N
// weft_boost and raw_boost are weft's Coroutine and bare switch over Boost
// (na without Boost.Context); ratio is swapcontext over weft's Coroutine.

#include "coro/coroutine.hpp"

#include <sched.h>
#include <ucontext.h>

#if WEFT_BENCH_BOOST_CONTEXT
#include <boost/context/detail/fcontext.hpp>
#endif

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
[[gnu::noinline]] double ns_per_iteration(long iterations, F&& run) {
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

// The bare switch (weft::context_switch, inlined as the Coroutine inlines
// it), without the Coroutine bookkeeping.
weft::Context raw_main;
weft::Context raw_other;
[[noreturn]] void raw_echo(std::int64_t v, void*) {
    for (;;) v = weft::context_switch(raw_other, raw_main, v + 1);
}
double raw_round_trip(long iterations) {
    weft::StackPool pool;
    weft::Stack stack = pool.acquire();
    weft_context_make(&raw_other, stack.top(), raw_echo, nullptr);
    std::int64_t sum = 0;
    const double ns = ns_per_iteration(iterations, [&](long n) {
        for (long i = 0; i < n; ++i) sum += weft::context_switch(raw_main, raw_other, i);
    });
    pool.release(stack);
    if (sum != iterations * (iterations + 1) / 2) std::abort();
    return ns;
}

#if WEFT_BENCH_BOOST_CONTEXT
// Boost.Context: jump_fcontext into a context that jumps straight back. The
// value travels in transfer_t::data both ways.
namespace fctx = boost::context::detail;
[[noreturn]] void boost_echo(fctx::transfer_t from) {
    for (;;) {
        const auto v = reinterpret_cast<std::intptr_t>(from.data);
        from = fctx::jump_fcontext(from.fctx, reinterpret_cast<void*>(v + 1));
    }
}
double boost_round_trip(long iterations) {
    weft::StackPool pool; // the same kind of stack as weft's contenders
    weft::Stack stack = pool.acquire();
    fctx::fcontext_t other = fctx::make_fcontext(stack.top(), stack.size, boost_echo);
    std::int64_t sum = 0;
    const double ns = ns_per_iteration(iterations, [&](long n) {
        for (long i = 0; i < n; ++i) {
            const fctx::transfer_t back = fctx::jump_fcontext(other, reinterpret_cast<void*>(i));
            other = back.fctx;
            sum += reinterpret_cast<std::intptr_t>(back.data);
        }
    });
    pool.release(stack);
    if (sum != iterations * (iterations + 1) / 2) std::abort();
    return ns;
}
constexpr bool kHaveBoost = true;
#else
double boost_round_trip(long) {
    return 0;
}
constexpr bool kHaveBoost = false;
#endif

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

// Keeps the whole run on the CPU it started on: every contender then meets
// the same core, caches and frequency. Returns that CPU.
int pin_to_this_cpu() {
    const int cpu = sched_getcpu();
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) std::perror("sched_setaffinity");
    return cpu;
}

} // namespace

int main(int argc, char** argv) {
    long iterations = 10'000'000;
    long runs = 7;
    const char* only = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            iterations = bench::positive(argv[++i], "--iterations");
        } else if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = bench::positive(argv[++i], "--runs");
        } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            std::fprintf(stderr, "usage: coro_switch [--iterations N] [--runs R] "
                                 "[--only weft|raw|boost|swapcontext]\n");
            return 2;
        }
    }
    if (only) {
        // One loop of N round trips and nothing else, for callgrind.
        if (std::strcmp(only, "weft") == 0) {
            weft_round_trip(iterations);
        } else if (std::strcmp(only, "raw") == 0) {
            raw_round_trip(iterations);
        } else if (std::strcmp(only, "boost") == 0 && kHaveBoost) {
            boost_round_trip(iterations);
        } else if (std::strcmp(only, "swapcontext") == 0) {
            swapcontext_round_trip(iterations);
        } else {
            std::fprintf(stderr, "coro_switch: no contender '%s'%s\n", only,
                         kHaveBoost ? "" : " (built without Boost.Context)");
            return 2;
        }
        return 0;
    }
    const int cpu = pin_to_this_cpu();
    // swapcontext makes a sigprocmask syscall per call: fewer iterations do.
    const long uc_iterations = std::max(1L, iterations / 20);

    std::vector<double> weft_ns, raw_ns, boost_ns, uc_ns;
    weft_round_trip(iterations / 10 + 1); // warm the pool and the caches
    for (long r = 0; r < runs; ++r) {
        weft_ns.push_back(weft_round_trip(iterations));
        raw_ns.push_back(raw_round_trip(iterations));
        if (kHaveBoost) boost_ns.push_back(boost_round_trip(iterations));
        uc_ns.push_back(swapcontext_round_trip(uc_iterations));
    }
    const double weft = bench::median(weft_ns), raw = bench::median(raw_ns),
                 uc = bench::median(uc_ns);
    std::printf("round trip = resume + yield, median of %ld runs on CPU %d\n", runs, cpu);
    std::printf("  weft Coroutine    %8.2f ns  (%ld round trips per run)\n", weft, iterations);
    std::printf("  weft raw switch   %8.2f ns\n", raw);
    char boost_figure[32] = "na", weft_boost[16] = "na", raw_boost[16] = "na";
    if (kHaveBoost) {
        const double boost = bench::median(boost_ns);
        std::printf("  Boost jump_fcontext %6.2f ns\n", boost);
        std::printf("  weft / Boost: Coroutine %.2fx, raw switch %.2fx\n", weft / boost,
                    raw / boost);
        std::snprintf(boost_figure, sizeof boost_figure, "%.2f", boost);
        std::snprintf(weft_boost, sizeof weft_boost, "%.2f", weft / boost);
        std::snprintf(raw_boost, sizeof raw_boost, "%.2f", raw / boost);
    } else {
        std::printf("  Boost jump_fcontext: not measured, built without Boost.Context "
                    "(libboost-context-dev)\n");
    }
    std::printf("  glibc swapcontext %8.2f ns  (%ld round trips per run)\n", uc, uc_iterations);
    std::printf("result round_trip_ns=%.2f raw_switch_ns=%.2f boost_ns=%s weft_boost=%s "
                "raw_boost=%s swapcontext_ns=%.2f ratio=%.1f\n",
                weft, raw, boost_figure, weft_boost, raw_boost, uc, uc / weft);
    return 0;
}
