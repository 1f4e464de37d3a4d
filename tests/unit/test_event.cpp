// Event and its callback list: removal during notification, replay, counted
// start/stop, lifetime, notify hooks.

#include "event/event.hpp"
#include "event/event_state.hpp"
#include "event_helpers.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

using weft::Callback;
using weft::Event;

namespace {

// An event the test fires by hand.
class Manual final : public Event {
public:
    explicit Manual(weft::Loop& loop, std::uint16_t flags = 0) : Event(loop, flags) {}
    void fire(std::int64_t r) { notify(r); }
    void finish(std::int64_t r) { complete(r); }
    int starts = 0, stops = 0;
    std::string info() const override { return describe("manual"); }

private:
    void on_start() override { ++starts; }
    void on_stop() override { ++stops; }
};

// A callback that logs its name and may act on others when called.
struct Probe : Callback {
    char name;
    std::string* log;
    std::function<void()> action;
    Probe(char n, std::string* l) : name(n), log(l) {
        fn = [](Callback& c, Event&, std::int64_t) {
            auto& p = static_cast<Probe&>(c);
            *p.log += p.name;
            if (p.action) p.action();
        };
    }
};

} // namespace

TEST_CASE("a callback that removes itself during notification runs once", "[event]") {
    test::EventLoop t;
    Manual e(t.loop);
    std::string log;
    Probe a('a', &log), b('b', &log), c('c', &log), d('d', &log);
    for (Probe* p : {&a, &b, &c, &d}) e.subscribe(*p);
    b.action = [&] { e.unsubscribe(b); };
    e.fire(1);
    std::sort(log.begin(), log.end());
    CHECK(log == "abcd");
    log.clear();
    e.fire(2);
    std::sort(log.begin(), log.end());
    CHECK(log == "acd");
    for (Probe* p : {&a, &c, &d}) e.unsubscribe(*p);
}

TEST_CASE("removing the next callback (or any other) during notification skips only it",
          "[event]") {
    test::EventLoop t;
    for (int victim = 0; victim < 5; ++victim) {
        for (int remover = 0; remover < 5; ++remover) {
            if (victim == remover) continue;
            Manual e(t.loop);
            std::string log;
            std::vector<std::unique_ptr<Probe>> probes;
            for (int i = 0; i < 5; ++i) {
                probes.push_back(std::make_unique<Probe>(char('a' + i), &log));
                e.subscribe(*probes.back());
            }
            probes[remover]->action = [&, victim] { e.unsubscribe(*probes[victim]); };
            e.fire(0);
            // Each callback ran at most once; the victim ran only if its
            // turn came before the removal.
            std::string sorted = log;
            std::sort(sorted.begin(), sorted.end());
            CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
            const bool victim_ran = log.find(char('a' + victim)) != std::string::npos;
            const bool victim_first =
                victim_ran && log.find(char('a' + victim)) < log.find(char('a' + remover));
            CHECK(victim_ran == victim_first);
            CHECK(log.size() == (victim_ran ? 5u : 4u));
            // The list is whole afterwards: the rest run once each, and each
            // can leave.
            probes[remover]->action = nullptr;
            log.clear();
            e.fire(0);
            CHECK(log.size() == 4u);
            CHECK(log.find(char('a' + victim)) == std::string::npos);
            for (auto& p : probes) e.unsubscribe(*p);
            CHECK(e.subscribers() == 0);
            for (auto& p : probes) CHECK(p->event == nullptr);
        }
    }
}

TEST_CASE("a callback added during notification waits for the next one", "[event]") {
    test::EventLoop t;
    Manual e(t.loop);
    std::string log;
    Probe a('a', &log), late('L', &log);
    a.action = [&] {
        if (!late.event) e.subscribe(late);
    };
    e.subscribe(a);
    e.fire(0);
    CHECK(log == "a");
    e.fire(0);
    std::sort(log.begin(), log.end());
    CHECK(log == "Laa");
    e.unsubscribe(a);
    e.unsubscribe(late);
}

TEST_CASE("a completed event replays its result to late subscribers", "[event]") {
    test::EventLoop t;
    Manual e(t.loop);
    e.finish(42);
    std::int64_t seen = 0;
    struct Late : Callback {
        std::int64_t* seen;
    } late;
    late.seen = &seen;
    late.fn = [](Callback& c, Event&, std::int64_t r) { *static_cast<Late&>(c).seen = r; };
    e.subscribe(late);
    CHECK(seen == 42);
    e.unsubscribe(late);
}

TEST_CASE("start and stop are counted, a stop with nothing started steals nothing", "[event]") {
    test::EventLoop t;
    Manual e(t.loop);
    auto& state = weft::EventState::of(t.loop);
    e.start();
    e.start();
    CHECK(e.starts == 1);
    CHECK(state.started_events() == 1);
    e.stop();
    CHECK(e.stops == 0);
    e.stop();
    CHECK(e.stops == 1);
    e.stop(); // a double stop
    e.stop();
    CHECK(e.stops == 1);
    CHECK(state.started_events() == 0);
    Manual other(t.loop);
    other.start();
    e.stop(); // must not stop `other`
    CHECK(state.started_events() == 1);
    other.stop();
}

TEST_CASE("an event made on the heap lives while referenced, dispose is idempotent", "[event]") {
    test::EventLoop t;
    auto* e = Event::make<Manual>(t.loop);
    weft::Ref<Manual> held = weft::Ref<Manual>::adopt(e);
    e->retain(); // the creator's second reference, given up by dispose
    std::string log;
    Probe p('p', &log);
    e->subscribe(p);
    p.action = [&] { e->unsubscribe(p); };
    e->dispose(); // closes: wakes the subscriber
    e->dispose();
    CHECK(log == "p");
    CHECK(held->has(Event::kClosed));
    // The last reference goes with `held`; LSan and ASan watch the rest.
}

TEST_CASE("a callback may dispose the event that notifies it", "[event]") {
    test::EventLoop t;
    auto* e = Event::make<Manual>(t.loop);
    std::string log;
    Probe a('a', &log), b('b', &log);
    e->subscribe(a);
    e->subscribe(b);
    a.action = [&] {
        e->unsubscribe(a);
        e->unsubscribe(b);
        e->dispose(); // freed only after the notification ends
    };
    e->fire(0);
    CHECK(log.size() == 1);
}

TEST_CASE("a notify hook sees the result before subscribers and may change it", "[event]") {
    test::EventLoop t;
    Manual e(t.loop);
    std::vector<std::int64_t> seen;
    e.set_notify_hook(
        [](Event&, std::int64_t& r, void* data) {
            static_cast<std::vector<std::int64_t>*>(data)->push_back(r);
            r *= 10;
        },
        &seen);
    std::int64_t got = 0;
    struct Sub : Callback {
        std::int64_t* got;
    } sub;
    sub.got = &got;
    sub.fn = [](Callback& c, Event&, std::int64_t r) { *static_cast<Sub&>(c).got = r; };
    e.subscribe(sub);
    e.fire(7);
    CHECK(seen == std::vector<std::int64_t>{7});
    CHECK(got == 70);
    e.unsubscribe(sub);
    CHECK(e.info() == "manual idle, 0 waiting");
}

TEST_CASE("an event fired again by its own callback notifies again after the round", "[event]") {
    test::EventLoop t;
    Manual e(t.loop);
    std::string log;
    Probe a('a', &log), b('b', &log);
    e.subscribe(a);
    e.subscribe(b);
    int fires = 0;
    a.action = [&] {
        if (++fires == 1) e.fire(2);
    };
    e.fire(1);
    CHECK(log.size() == 4); // a and b, twice
    e.unsubscribe(a);
    e.unsubscribe(b);
}

TEST_CASE("random removals and additions during notification: each callback runs once or "
          "is skipped when removed before its turn",
          "[event]") {
    struct Node : Callback {
        int id = 0;
    };
    struct Context {
        Manual* event;
        std::vector<std::unique_ptr<Node>>* nodes;
        std::vector<int>* calls;
        std::vector<int>* removed_first;
        std::mt19937* rng;
    };
    static Context ctx;
    test::EventLoop t;
    std::mt19937 rng(1);
    Callback::Fn act = [](Callback& c, Event&, std::int64_t) {
        auto& me = static_cast<Node&>(c);
        ++(*ctx.calls)[static_cast<std::size_t>(me.id)];
        for (int k = static_cast<int>((*ctx.rng)() % 4); k > 0; --k) {
            if ((*ctx.rng)() % 3 < 2) {
                const std::size_t victim = (*ctx.rng)() % ctx.nodes->size();
                Node& v = *(*ctx.nodes)[victim];
                if (!v.event) continue;
                if ((*ctx.calls)[victim] == 0) (*ctx.removed_first)[victim] = 1;
                ctx.event->unsubscribe(v);
            } else {
                auto added = std::make_unique<Node>();
                added->id = static_cast<int>(ctx.nodes->size());
                added->fn = me.fn;
                ctx.calls->push_back(0);
                ctx.removed_first->push_back(0);
                ctx.nodes->push_back(std::move(added));
                ctx.event->subscribe(*ctx.nodes->back());
            }
        }
    };
    for (int round = 0; round < 20'000; ++round) {
        Manual event(t.loop);
        std::vector<std::unique_ptr<Node>> nodes;
        std::vector<int> calls, removed_first;
        ctx = {&event, &nodes, &calls, &removed_first, &rng};
        const int n = 1 + static_cast<int>(rng() % 9);
        for (int i = 0; i < n; ++i) {
            nodes.push_back(std::make_unique<Node>());
            nodes.back()->id = i;
            nodes.back()->fn = act;
            calls.push_back(0);
            removed_first.push_back(0);
            event.subscribe(*nodes.back());
        }
        event.fire(0);
        for (std::size_t i = 0; i < calls.size(); ++i) {
            // Present at the start and not removed before its turn: once.
            // Removed first, or added during the notification: never.
            const int expected = static_cast<int>(i) < n && !removed_first[i] ? 1 : 0;
            if (calls[i] != expected) FAIL("round " << round << ", callback " << i);
        }
        for (auto& node : nodes) event.unsubscribe(*node);
        REQUIRE(event.subscribers() == 0);
    }
}
