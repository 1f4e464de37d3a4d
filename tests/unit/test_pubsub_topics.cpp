// The pub/sub hub's topics and messages: ids, history, Last-Event-ID,
// max_topics, and the bytes a message is sent as.

#include "handlers/pubsub/handler.hpp"
#include "handlers/pubsub/hub.hpp"
#include "handlers/pubsub/message.hpp"
#include "handlers/pubsub/topics.hpp"
#include "loop/loop.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace weft::handlers::pubsub;

namespace {

std::shared_ptr<Message> text(std::string_view body) {
    return Message::make(body, true);
}

// A space and one loop's hub (the loop never runs: these tests count
// subscribers, they deliver nothing).
struct Space {
    std::shared_ptr<TopicSpace> space = std::make_shared<TopicSpace>();
    weft::FdTable table{64};
    weft::Loop loop{table};
    LoopHub* hub;
    Space() {
        REQUIRE(loop.open() == 0);
        hub = &space->hub(loop);
    }
};

struct Joined {
    Topic* topic;
    std::vector<MessagePtr> history;
    std::uint64_t seen_through = 0;
};

} // namespace

TEST_CASE("a message is one WebSocket frame and one SSE event, made once", "[pubsub]") {
    auto message = text("hello");
    message->set_id(42);
    CHECK(message->websocket() == std::string_view("\x81\x05hello", 7));
    CHECK(message->sse() == "id: 42\ndata: hello\n\n");
    CHECK(message->body() == "hello");

    auto binary = Message::make(std::string_view("\xff\x00", 2), false);
    binary->set_id(1);
    CHECK(binary->websocket() == std::string_view("\x82\x02\xff\x00", 4));

    // Lines end at \n, \r\n and \r; each is a data line.
    auto lines = text("a\nb\r\nc\rd");
    lines->set_id(18446744073709551615ull);
    CHECK(lines->sse() == "id: 18446744073709551615\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
    auto trailing = text("x\n");
    trailing->set_id(7);
    CHECK(trailing->sse() == "id: 7\ndata: x\ndata: \n\n");
    auto empty = text("");
    empty->set_id(7);
    CHECK(empty->sse() == "id: 7\ndata: \n\n");
    CHECK(empty->websocket() == std::string_view("\x81\x00", 2));

    // A long body: the 16-bit length form.
    const std::string big(300, 'z');
    auto long_message = text(big);
    CHECK(long_message->websocket().substr(0, 4) == std::string_view("\x81\x7e\x01\x2c", 4));
    CHECK(long_message->body() == big);
}

TEST_CASE("ids increase per topic and start from the real-time clock", "[pubsub]") {
    TopicSpace space;
    const Limits limits{10, 100};
    const std::uint64_t before = realtime_us();
    TopicSpace::Published first, second;
    REQUIRE(space.publish("room", text("1"), limits, nullptr, first));
    REQUIRE(space.publish("room", text("2"), limits, nullptr, second));
    CHECK(first.id >= before);
    CHECK(second.id > first.id);
    CHECK(first.subscribers == 0);
    // A burst in one microsecond still counts up.
    std::uint64_t last = second.id;
    for (int i = 0; i < 100; ++i) {
        TopicSpace::Published p;
        REQUIRE(space.publish("room", text("n"), limits, nullptr, p));
        CHECK(p.id == std::max(last + 1, p.id));
        CHECK(p.id > last);
        last = p.id;
    }
}

TEST_CASE("history keeps the last N for late joiners, after Last-Event-ID", "[pubsub]") {
    Space fixture;
    TopicSpace& space = *fixture.space;
    const Limits limits{3, 100};
    std::vector<std::uint64_t> ids;
    for (int i = 0; i < 5; ++i) {
        TopicSpace::Published p;
        REQUIRE(space.publish("room", text(std::to_string(i)), limits, nullptr, p));
        ids.push_back(p.id);
    }
    LoopHub* hub = fixture.hub;
    Joined all;
    all.topic = space.subscribe("room", *hub, limits, 0, all.history, all.seen_through);
    REQUIRE(all.topic);
    REQUIRE(all.history.size() == 3);
    CHECK(all.history[0]->body() == "2");
    CHECK(all.history[2]->body() == "4");
    CHECK(all.seen_through == ids[4]);

    Joined resumed;
    resumed.topic =
        space.subscribe("room", *hub, limits, ids[3], resumed.history, resumed.seen_through);
    REQUIRE(resumed.history.size() == 1);
    CHECK(resumed.history[0]->id() == ids[4]);
    CHECK(resumed.topic == all.topic);
    CHECK(all.topic->subscribers == 2);

    space.unsubscribe(*all.topic, *hub);
    space.unsubscribe(*resumed.topic, *hub);
    // No subscribers, but history: the topic stays.
    CHECK(space.topic_count() == 1);
}

TEST_CASE("history_memory bounds kept history, every topic together", "[pubsub]") {
    Space fixture;
    TopicSpace& space = *fixture.space;
    const std::string body(1000, 'm');
    const std::uint64_t cost = kept_cost(*text(body));
    const Limits limits{10, 100, 4 * cost};
    TopicSpace::Published p;
    // Ten topics nobody reads: the least recently used go with their history.
    for (int t = 0; t < 10; ++t)
        REQUIRE(space.publish("t" + std::to_string(t), text(body), limits, nullptr, p));
    CHECK(space.history_bytes() == 4 * cost);
    CHECK(space.topic_count() == 4);
    LoopHub* hub = fixture.hub;
    Joined kept;
    kept.topic = space.subscribe("t9", *hub, limits, 0, kept.history, kept.seen_through);
    CHECK(kept.history.size() == 1);
    Joined gone;
    gone.topic = space.subscribe("t5", *hub, limits, 0, gone.history, gone.seen_through);
    CHECK(gone.history.empty());

    // A read topic: the idle ones give up theirs first, then its own oldest.
    for (int i = 0; i < 10; ++i) space.publish(*kept.topic, text(body), limits, nullptr);
    CHECK(space.history_bytes() == 4 * cost);
    CHECK(kept.topic->history.size() == 4);
    CHECK(space.topic_count() == 2); // t9 and t5, both read

    // A message past the budget by itself is not kept; t9's stay.
    space.publish(*gone.topic, text(std::string(5 * 1000, 'x')), limits, nullptr);
    CHECK(gone.topic->history.empty());
    CHECK(space.history_bytes() == 4 * cost);
    space.unsubscribe(*kept.topic, *hub);
    space.unsubscribe(*gone.topic, *hub);
}

TEST_CASE("a topic without subscribers or history is dropped", "[pubsub]") {
    Space fixture;
    TopicSpace& space = *fixture.space;
    const Limits limits{0, 100};
    TopicSpace::Published p;
    REQUIRE(space.publish("nobody", text("x"), limits, nullptr, p));
    CHECK(space.topic_count() == 0);
    LoopHub* hub = fixture.hub;
    std::vector<MessagePtr> history;
    std::uint64_t seen = 0;
    Topic* topic = space.subscribe("room", *hub, limits, 0, history, seen);
    REQUIRE(topic);
    CHECK(space.topic_count() == 1);
    space.unsubscribe(*topic, *hub);
    CHECK(space.topic_count() == 0);
}

TEST_CASE("at max_topics the least recently used idle topic goes, all busy: refused", "[pubsub]") {
    Space fixture;
    TopicSpace& space = *fixture.space;
    const Limits limits{1, 3};
    TopicSpace::Published p;
    REQUIRE(space.publish("a", text("a"), limits, nullptr, p));
    REQUIRE(space.publish("b", text("b"), limits, nullptr, p));
    REQUIRE(space.publish("c", text("c"), limits, nullptr, p));
    REQUIRE(space.publish("a", text("a2"), limits, nullptr, p)); // a is used again: b is oldest
    REQUIRE(space.publish("d", text("d"), limits, nullptr, p));
    CHECK(space.topic_count() == 3);
    LoopHub* hub = fixture.hub;
    std::vector<MessagePtr> history;
    std::uint64_t seen = 0;
    Topic* b = space.subscribe("b", *hub, limits, 0, history, seen);
    REQUIRE(b);
    CHECK(history.empty()); // b was evicted with its history, made anew (c went)
    history.clear();
    Topic* a = space.subscribe("a", *hub, limits, 0, history, seen);
    REQUIRE(a);
    REQUIRE(history.size() == 1);
    CHECK(history[0]->body() == "a2");
    Topic* d = space.subscribe("d", *hub, limits, 0, history, seen);
    REQUIRE(d);
    // Every topic has a subscriber: a new one is refused, by publish or subscribe.
    CHECK_FALSE(space.publish("e", text("e"), limits, nullptr, p));
    CHECK(space.subscribe("e", *hub, limits, 0, history, seen) == nullptr);
    // A publish to an existing topic still goes.
    CHECK(space.publish("a", text("a3"), limits, nullptr, p));
    // No history and nobody listening: nothing is made, so nothing refused.
    CHECK(space.publish("f", text("f"), Limits{0, 3}, nullptr, p));
    space.unsubscribe(*a, *hub);
    space.unsubscribe(*b, *hub);
    space.unsubscribe(*d, *hub);
}

TEST_CASE("topic names: 1-200 bytes of unreserved characters and '/', no empty segment",
          "[pubsub]") {
    CHECK(topic_of("room"));
    CHECK(topic_of("a/b.c_d~e-f9"));
    CHECK_FALSE(topic_of(""));
    CHECK_FALSE(topic_of("/a"));
    CHECK_FALSE(topic_of("a/"));
    CHECK_FALSE(topic_of("a//b"));
    CHECK_FALSE(topic_of("a b"));
    CHECK_FALSE(topic_of("a%2F"));
    CHECK(topic_of(std::string(200, 'x')));
    CHECK_FALSE(topic_of(std::string(201, 'x')));
}

TEST_CASE("a reloaded handler with the same site and route takes the same space", "[pubsub]") {
    auto first = space_for("site /live");
    auto again = space_for("site /live");
    auto other = space_for("site /other");
    CHECK(first == again);
    CHECK(first != other);
    first.reset();
    again.reset();
    // Nothing holds it: a new one.
    auto fresh = space_for("site /live");
    CHECK(fresh);
}
