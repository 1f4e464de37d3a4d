// Costs of the event layer, each a median of several runs on one loop:
//   await_any_ns  one await_any over 3 events, suspended and woken: subscribe
//                 3, suspend, another coroutine fires one, resume, unsubscribe 3
//   timer_ns      a TimerEvent started and stopped (arm + cancel on the wheel)
//   channel_ns    one item through a Channel<int> from one coroutine to another
//
//   events [--iterations N] [--runs R]
//
// The last line is machine-readable: result await_any_ns=N timer_ns=N channel_ns=N

#include "event/channel.hpp"
#include "event/completion_event.hpp"
#include "event/timer_event.hpp"
#include "event/waker.hpp"

#include "stats.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// An event fired by hand.
class Pulse final : public weft::Event {
public:
    explicit Pulse(weft::Loop& loop) : Event(loop) {}
    void fire() { notify(0); }
};

double ns_since(Clock::time_point start, long n) {
    return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / double(n);
}

// Runs `body` as a coroutine on a fresh loop until every task has ended.
template <class F>
void on_loop(F&& body) {
    weft::FdTable table;
    weft::Loop loop(table);
    if (loop.open() != 0) std::exit(1);
    loop.spawn([&] { body(loop); });
    loop.spawn([&] { loop.stop(std::chrono::seconds(600)); });
    loop.run();
}

double await_any_run(long n) {
    double ns = 0;
    on_loop([&](weft::Loop& loop) {
        Pulse a(loop), b(loop), c(loop);
        bool done = false;
        auto firer = weft::CompletionEvent::of(*loop.spawn([&] {
            while (!done) {
                b.fire();
                weft::yield(weft::yield_value(weft::Op::yield));
            }
        }));
        long fired_b = 0;
        const auto start = Clock::now();
        for (long i = 0; i < n; ++i) fired_b += weft::await_any({&a, &b, &c}).index == 1;
        ns = ns_since(start, n);
        done = true;
        weft::await(*firer); // it uses the events: let it end first
        if (fired_b != n) std::abort();
    });
    return ns;
}

double timer_run(long n) {
    double ns = 0;
    on_loop([&](weft::Loop& loop) {
        std::vector<weft::TimerEvent*> timers;
        std::mt19937 rng(1);
        for (int i = 0; i < 1024; ++i)
            timers.push_back(new weft::TimerEvent(loop, 1 + rng() % 60'000));
        const auto start = Clock::now();
        for (long i = 0; i < n; ++i) {
            weft::TimerEvent& t = *timers[static_cast<std::size_t>(i) & 1023];
            t.start();
            t.stop();
        }
        ns = ns_since(start, n);
        for (auto* t : timers) delete t;
    });
    return ns;
}

double channel_run(long n) {
    double ns = 0;
    on_loop([&](weft::Loop& loop) {
        weft::Channel<int> channel(loop, 64);
        long sum = 0;
        auto receiver = weft::CompletionEvent::of(*loop.spawn([&] {
            int v = 0;
            while (channel.receive(v) == 0) sum += v;
        }));
        const auto start = Clock::now();
        for (long i = 0; i < n; ++i) channel.send(1);
        channel.close();
        weft::await(*receiver); // it uses the channel: let it end first
        ns = ns_since(start, n);
        if (sum != n) std::abort();
    });
    return ns;
}

} // namespace

int main(int argc, char** argv) {
    long iterations = 2'000'000;
    long runs = 5;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) {
            std::fprintf(stderr, "usage: events [--iterations N] [--runs R]\n");
            return 2;
        }
        if (std::strcmp(argv[i], "--iterations") == 0) {
            iterations = bench::positive(argv[i + 1], "--iterations");
        } else if (std::strcmp(argv[i], "--runs") == 0) {
            runs = bench::positive(argv[i + 1], "--runs");
        } else {
            std::fprintf(stderr, "usage: events [--iterations N] [--runs R]\n");
            return 2;
        }
    }
    std::vector<double> await_ns, timer_ns, channel_ns;
    for (long r = 0; r < runs; ++r) {
        await_ns.push_back(await_any_run(iterations));
        timer_ns.push_back(timer_run(iterations));
        channel_ns.push_back(channel_run(iterations));
    }
    const double await_any = bench::median(await_ns), timer = bench::median(timer_ns),
                 channel = bench::median(channel_ns);
    std::printf("%ld iterations a run, median of %ld runs\n", iterations, runs);
    std::printf("  await_any over 3 events, suspended and woken  %7.1f ns\n", await_any);
    std::printf("  TimerEvent start + stop                       %7.1f ns\n", timer);
    std::printf("  Channel<int> send + receive                   %7.1f ns\n", channel);
    std::printf("result await_any_ns=%.1f timer_ns=%.1f channel_ns=%.1f\n", await_any, timer,
                channel);
    return 0;
}
