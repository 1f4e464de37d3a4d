#include "handlers/pubsub/topics.hpp"

#include "handlers/pubsub/hub.hpp"
#include "loop/loop.hpp"

#include <time.h>

#include <algorithm>

namespace weft::handlers::pubsub {

std::uint64_t realtime_us() {
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000 +
           static_cast<std::uint64_t>(now.tv_nsec) / 1000;
}

namespace {

// The Message, its control block and two strings' heap blocks, beside the
// bytes themselves.
constexpr std::uint64_t kMessageOverhead = 160;

} // namespace

std::uint64_t kept_cost(const Message& message) {
    return message.bytes_held() + kMessageOverhead;
}

TopicSpace::TopicSpace() = default;
TopicSpace::~TopicSpace() = default;

LoopHub& TopicSpace::hub(Loop& loop) {
    std::lock_guard lock(mutex_);
    const std::size_t index = loop.index();
    if (hubs_.size() <= index) hubs_.resize(index + 1);
    if (!hubs_[index]) hubs_[index] = std::make_unique<LoopHub>(*this, loop);
    return *hubs_[index];
}

std::size_t TopicSpace::topic_count() {
    std::lock_guard lock(mutex_);
    return topics_.size();
}

std::uint64_t TopicSpace::history_bytes() {
    std::lock_guard lock(mutex_);
    return history_bytes_;
}

void TopicSpace::make_idle(Topic& topic) {
    topic.idle = true;
    topic.idle_prev = idle_tail_;
    topic.idle_next = nullptr;
    (idle_tail_ ? idle_tail_->idle_next : idle_head_) = &topic;
    idle_tail_ = &topic;
}

void TopicSpace::make_busy(Topic& topic) {
    if (!topic.idle) return;
    (topic.idle_prev ? topic.idle_prev->idle_next : idle_head_) = topic.idle_next;
    (topic.idle_next ? topic.idle_next->idle_prev : idle_tail_) = topic.idle_prev;
    topic.idle = false;
    topic.idle_prev = topic.idle_next = nullptr;
}

void TopicSpace::drop(Topic& topic) {
    make_busy(topic);
    history_bytes_ -= topic.history_bytes;
    topics_.erase(topic.name); // frees it
}

void TopicSpace::forget_oldest(Topic& topic) {
    const std::uint64_t cost = kept_cost(*topic.history.front());
    topic.history_bytes -= cost;
    history_bytes_ -= cost;
    topic.history.pop_front();
}

void TopicSpace::keep(Topic& topic, const MessagePtr& message, const Limits& limits) {
    if (!limits.history) {
        while (!topic.history.empty()) forget_oldest(topic);
        return;
    }
    const std::uint64_t cost = kept_cost(*message);
    topic.history.push_back(message);
    topic.history_bytes += cost;
    history_bytes_ += cost;
    while (topic.history.size() > limits.history) forget_oldest(topic);
    // Past the space's budget, the least recently used topics nobody reads
    // give up theirs first (and go), then this topic its oldest, the new
    // message last. Topics with subscribers keep what they have: no walk
    // over every topic under the lock.
    while (history_bytes_ > limits.history_memory) {
        if (idle_head_ && idle_head_ != &topic) {
            drop(*idle_head_);
        } else if (!topic.history.empty()) {
            forget_oldest(topic);
        } else {
            break; // the others, all read, hold the budget
        }
    }
}

Topic* TopicSpace::find_or_make(std::string_view name, const Limits& limits) {
    const auto found = topics_.find(name);
    if (found != topics_.end()) return found->second.get();
    if (topics_.size() >= std::max(limits.max_topics, 1u)) {
        if (!idle_head_) return nullptr;
        drop(*idle_head_); // the least recently used without subscribers
    }
    auto topic = std::make_unique<Topic>();
    topic->name.assign(name);
    topic->serial = next_serial_++;
    Topic* raw = topic.get();
    topics_.emplace(raw->name, std::move(topic));
    make_idle(*raw);
    return raw;
}

TopicSpace::Published TopicSpace::publish_locked(Topic& topic,
                                                 const std::shared_ptr<Message>& message,
                                                 const Limits& limits, LoopHub* here,
                                                 bool& here_got) {
    topic.last_id = std::max(topic.last_id + 1, realtime_us());
    message->set_id(topic.last_id);
    if (topic.idle) { // the most recently used now, the last to give up its history
        make_busy(topic);
        make_idle(topic);
    }
    keep(topic, message, limits);
    for (auto& [hub, count] : topic.loops) {
        const bool mine = hub == here;
        hub->enqueue(topic.serial, message, mine);
        here_got |= mine;
    }
    return {topic.last_id, topic.subscribers};
}

bool TopicSpace::publish(std::string_view name, const std::shared_ptr<Message>& message,
                         const Limits& limits, LoopHub* here, Published& out) {
    bool here_got = false;
    {
        std::lock_guard lock(mutex_);
        const auto found = topics_.find(name);
        if (found == topics_.end() && !limits.history) {
            // Nobody listens and nothing is kept: no topic is made.
            message->set_id(realtime_us());
            out = {message->id(), 0};
            return true;
        }
        Topic* topic = found != topics_.end() ? found->second.get() : find_or_make(name, limits);
        if (!topic) return false;
        out = publish_locked(*topic, message, limits, here, here_got);
        if (!topic->subscribers && topic->history.empty()) drop(*topic);
    }
    if (here_got) here->drain();
    return true;
}

TopicSpace::Published TopicSpace::publish(Topic& topic, const std::shared_ptr<Message>& message,
                                          const Limits& limits, LoopHub* here) {
    bool here_got = false;
    Published out;
    {
        std::lock_guard lock(mutex_);
        out = publish_locked(topic, message, limits, here, here_got);
    }
    if (here_got) here->drain();
    return out;
}

Topic* TopicSpace::subscribe(std::string_view name, LoopHub& hub, const Limits& limits,
                             std::uint64_t after, std::vector<MessagePtr>& history,
                             std::uint64_t& seen_through) {
    std::lock_guard lock(mutex_);
    Topic* topic = find_or_make(name, limits);
    if (!topic) return nullptr;
    make_busy(*topic);
    ++topic->subscribers;
    auto loop = std::find_if(topic->loops.begin(), topic->loops.end(),
                             [&](const auto& entry) { return entry.first == &hub; });
    if (loop == topic->loops.end())
        topic->loops.emplace_back(&hub, 1);
    else
        ++loop->second;
    for (const MessagePtr& message : topic->history)
        if (message->id() > after) history.push_back(message);
    seen_through = topic->last_id;
    return topic;
}

void TopicSpace::unsubscribe(Topic& topic, LoopHub& hub) {
    std::lock_guard lock(mutex_);
    auto loop = std::find_if(topic.loops.begin(), topic.loops.end(),
                             [&](const auto& entry) { return entry.first == &hub; });
    if (loop != topic.loops.end() && --loop->second == 0) topic.loops.erase(loop);
    if (--topic.subscribers) return;
    if (topic.history.empty())
        drop(topic);
    else
        make_idle(topic);
}

std::shared_ptr<TopicSpace> space_for(const std::string& key) {
    static std::mutex mutex;
    static std::vector<std::pair<std::string, std::weak_ptr<TopicSpace>>> spaces;
    std::lock_guard lock(mutex);
    std::erase_if(spaces, [](const auto& entry) { return entry.second.expired(); });
    for (const auto& [name, space] : spaces)
        if (name == key)
            if (std::shared_ptr<TopicSpace> kept = space.lock()) return kept;
    auto space = std::make_shared<TopicSpace>();
    spaces.emplace_back(key, space);
    return space;
}

} // namespace weft::handlers::pubsub
