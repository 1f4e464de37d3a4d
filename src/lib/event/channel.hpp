#pragma once
// Channel<T>: a bounded queue between coroutines of one loop. send() waits
// while it is full, receive() while it is empty; close() wakes everyone
// (receivers still get what was queued, then -EPIPE).
//
// readable() and writable() are level-triggered events for await_any: ready
// while an item waits (or room is free), and once closed.

#include "event/event.hpp"
#include "event/waker.hpp"

#include <cassert>
#include <optional>
#include <vector>

namespace weft {

template <class T>
class Channel {
public:
    Channel(Loop& loop, std::size_t capacity)
        : slots_(capacity), readable_(loop, *this, true), writable_(loop, *this, false) {
        assert(capacity > 0);
    }

    Event& readable() { return readable_; }
    Event& writable() { return writable_; }

    bool try_send(const T& value) {
        if (closed_ || count_ == slots_.size()) return false;
        return try_send(T(value));
    }
    // Leaves `value` alone when it fails.
    bool try_send(T&& value) {
        if (closed_ || count_ == slots_.size()) return false;
        slots_[(head_ + count_++) % slots_.size()] = std::move(value);
        readable_.ready(static_cast<std::int64_t>(count_));
        return true;
    }
    bool try_receive(T& out) {
        if (count_ == 0) return false;
        out = std::move(*slots_[head_]);
        slots_[head_].reset();
        head_ = (head_ + 1) % slots_.size();
        --count_;
        writable_.ready(static_cast<std::int64_t>(slots_.size() - count_));
        return true;
    }

    // 0, or -EPIPE once closed, or -ETIMEDOUT, or -ECANCELED.
    int send(T value, std::int64_t timeout_ms = -1) {
        for (;;) {
            if (closed_) return -EPIPE;
            if (try_send(std::move(value))) return 0;
            const AwaitResult r = await(writable_, timeout_ms);
            if (!r.fired()) return static_cast<int>(r.value);
        }
    }
    // 0, or -EPIPE once closed and drained, or -ETIMEDOUT, or -ECANCELED.
    int receive(T& out, std::int64_t timeout_ms = -1) {
        for (;;) {
            if (try_receive(out)) return 0;
            if (closed_) return -EPIPE;
            const AwaitResult r = await(readable_, timeout_ms);
            if (!r.fired()) return static_cast<int>(r.value);
        }
    }

    void close() {
        if (closed_) return;
        closed_ = true;
        readable_.close(-EPIPE);
        writable_.close(-EPIPE);
    }

    bool closed() const { return closed_; }
    std::size_t size() const { return count_; }
    std::size_t capacity() const { return slots_.size(); }

private:
    class Side final : public Event {
    public:
        Side(Loop& loop, Channel& channel, bool read)
            : Event(loop), channel_(channel), read_(read) {}
        void ready(std::int64_t n) {
            if (heard()) notify(n);
        }
        std::string info() const override {
            return describe(read_ ? "channel readable" : "channel writable") + ", " +
                   std::to_string(channel_.count_) + "/" + std::to_string(channel_.slots_.size());
        }

    private:
        bool ready_now(std::int64_t& result) override {
            const std::size_t n =
                read_ ? channel_.count_ : channel_.slots_.size() - channel_.count_;
            if (n == 0) return false;
            result = static_cast<std::int64_t>(n);
            return true;
        }
        Channel& channel_;
        bool read_;
    };

    std::vector<std::optional<T>> slots_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    bool closed_ = false;
    Side readable_;
    Side writable_;
};

} // namespace weft
