#pragma once
// Broadcast<T>: publish from any thread, every subscriber on every loop gets
// a copy (pub/sub, a chat room). Each loop with subscribers has a hub; a
// publish posts the message once to each hub (Loop::post), and the hub puts
// it in each local subscriber's channel. A subscriber awaits its channel's
// readable() next to its socket: no polling anywhere. A subscriber whose
// channel is full loses the message and counts it in lagged(). A hub goes
// with its last subscriber; subscribers must end before their loop does.

#include "event/channel.hpp"
#include "event/event_state.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

namespace weft {

template <class T>
class Broadcast {
    struct Hub;

public:
    class Subscriber {
    public:
        // On `loop`'s thread (its coroutine runs there).
        Subscriber(Broadcast& broadcast, Loop& loop, std::size_t capacity = 64)
            : channel_(loop, capacity), broadcast_(broadcast), hub_(broadcast.hub_of(loop)) {
            hub_->subscribers.push_back(this);
            // Publishers on other threads can wake it: not a deadlock.
            EventState::of(loop).add_external_source();
        }
        ~Subscriber() {
            EventState::of(hub_->loop).remove_external_source();
            auto& list = hub_->subscribers;
            list.erase(std::find(list.begin(), list.end(), this));
            if (list.empty()) broadcast_.drop_hub(hub_);
        }
        Subscriber(const Subscriber&) = delete;
        Subscriber& operator=(const Subscriber&) = delete;

        Channel<T>& channel() { return channel_; }
        Event& readable() { return channel_.readable(); }
        std::uint64_t lagged() const { return lagged_; }

    private:
        friend class Broadcast;
        void deliver(const T& message) {
            if (!channel_.try_send(message)) ++lagged_;
        }
        Channel<T> channel_;
        Broadcast& broadcast_;
        std::shared_ptr<Hub> hub_;
        std::uint64_t lagged_ = 0;
    };

    // Any thread.
    void publish(const T& message) {
        std::vector<std::shared_ptr<Hub>> hubs;
        {
            std::lock_guard lock(mutex_);
            hubs = hubs_;
        }
        for (auto& hub : hubs) {
            hub->loop.post([hub, message] {
                for (Subscriber* s : hub->subscribers) s->deliver(message);
            });
        }
    }

private:
    struct Hub {
        explicit Hub(Loop& l) : loop(l) {}
        Loop& loop;
        std::vector<Subscriber*> subscribers; // touched on loop's thread only
    };

    std::shared_ptr<Hub> hub_of(Loop& loop) {
        std::lock_guard lock(mutex_);
        for (auto& hub : hubs_)
            if (&hub->loop == &loop) return hub;
        return hubs_.emplace_back(std::make_shared<Hub>(loop));
    }

    void drop_hub(const std::shared_ptr<Hub>& hub) {
        std::lock_guard lock(mutex_);
        hubs_.erase(std::remove(hubs_.begin(), hubs_.end(), hub), hubs_.end());
    }

    std::mutex mutex_;
    std::vector<std::shared_ptr<Hub>> hubs_;
};

} // namespace weft
