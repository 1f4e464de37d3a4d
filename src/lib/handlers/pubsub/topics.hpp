#pragma once
// The topics of one pubsub handler, shared by every loop (a mutex inside:
// taken to publish, subscribe and leave, never while writing to a socket).
//
// A topic is made on first use (a subscribe or a publish) and dropped when
// it has neither subscribers nor history. It keeps its last `history`
// messages for late joiners, its last id, and which loops' hubs have
// subscribers to it, and how many: a publish hands the message once to
// each of those hubs (hub.hpp), whose loop puts it in its sessions' queues.
// At `max_topics`, a new topic takes the place of the least recently used
// one without subscribers; when every topic has subscribers, none is made
// (the caller answers 503).
//
// Ids: per topic, max(previous + 1, CLOCK_REALTIME in µs), so they keep
// increasing across restarts and an SSE Last-Event-ID from before one never
// skips a message published after it.
//
// Kept across reloads: space_for() keeps one space per "SITE ROUTE" while a
// handler or a session holds it, so a reloaded handler with the same route
// takes the same topics and its subscribers stay. Limits are the caller's at
// each call, so a reload's new `history` and `max_topics` apply at once.

#include "handlers/pubsub/message.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace weft {
class Loop;
}

namespace weft::handlers::pubsub {

class LoopHub;
using MessagePtr = std::shared_ptr<const Message>;

struct Limits {
    unsigned history = 0;
    unsigned max_topics = 10'000;
    // What kept history may take, every topic of the space together
    // (kept_cost() of each message).
    std::uint64_t history_memory = 32u << 20;
};

// What a kept message holds in memory: both encodings and its objects.
std::uint64_t kept_cost(const Message& message);

// One topic; its fields are the space's, under its mutex. A session keeps
// a pointer to its topic: a topic with subscribers is never dropped.
struct Topic {
    std::string name;
    std::uint64_t serial = 0; // unique in the space: hubs key their sessions by it
    std::uint64_t last_id = 0;
    std::deque<MessagePtr> history;
    std::uint64_t history_bytes = 0; // kept_cost() of each
    std::uint32_t subscribers = 0;
    std::vector<std::pair<LoopHub*, std::uint32_t>> loops; // hubs with subscribers, how many
    // Topics without subscribers, least recently used first.
    Topic* idle_prev = nullptr;
    Topic* idle_next = nullptr;
    bool idle = false;
};

class TopicSpace : public std::enable_shared_from_this<TopicSpace> {
public:
    TopicSpace();
    ~TopicSpace();
    TopicSpace(const TopicSpace&) = delete;
    TopicSpace& operator=(const TopicSpace&) = delete;

    // This loop's hub, made on first use; the loop's thread only.
    LoopHub& hub(Loop& loop);

    struct Published {
        std::uint64_t id = 0;
        std::uint32_t subscribers = 0; // sessions on every loop it goes to
    };
    // Gives `message` its id, keeps it in history, and hands it to every
    // hub with subscribers of `name`. `here` (may be null) is the caller's
    // loop's hub: its sessions get the message before this returns. false
    // when the topic would be new and max_topics topics all have subscribers.
    bool publish(std::string_view name, const std::shared_ptr<Message>& message,
                 const Limits& limits, LoopHub* here, Published& out);
    // The same for a subscriber's topic (clients_publish).
    Published publish(Topic& topic, const std::shared_ptr<Message>& message, const Limits& limits,
                      LoopHub* here);

    // Counts a subscriber of `name` on `hub`'s loop (making the topic);
    // `history` gets the kept messages with an id above `after`, and
    // `seen_through` the topic's last id: deliveries at or below it are in
    // that history or older, and must be skipped. nullptr when max_topics
    // topics all have subscribers.
    Topic* subscribe(std::string_view name, LoopHub& hub, const Limits& limits, std::uint64_t after,
                     std::vector<MessagePtr>& history, std::uint64_t& seen_through);
    void unsubscribe(Topic& topic, LoopHub& hub);

    std::size_t topic_count();
    // What kept history takes, every topic's (kept_cost()).
    std::uint64_t history_bytes();

private:
    Topic* find_or_make(std::string_view name, const Limits& limits);
    Published publish_locked(Topic& topic, const std::shared_ptr<Message>& message,
                             const Limits& limits, LoopHub* here, bool& here_got);
    void make_idle(Topic& topic);
    void make_busy(Topic& topic);
    void drop(Topic& topic);
    // Keeps `message` in the topic's history, within history and
    // history_memory.
    void keep(Topic& topic, const MessagePtr& message, const Limits& limits);
    void forget_oldest(Topic& topic);

    std::mutex mutex_;
    std::unordered_map<std::string_view, std::unique_ptr<Topic>> topics_; // keys view Topic::name
    Topic* idle_head_ = nullptr;
    Topic* idle_tail_ = nullptr;
    std::uint64_t next_serial_ = 1;
    std::uint64_t history_bytes_ = 0;            // every topic's
    std::vector<std::unique_ptr<LoopHub>> hubs_; // by loop index
};

// The space of the handler at "SITE ROUTE": the one kept while something
// holds it (a reload), else a new one.
std::shared_ptr<TopicSpace> space_for(const std::string& key);

// CLOCK_REALTIME in microseconds.
std::uint64_t realtime_us();

} // namespace weft::handlers::pubsub
