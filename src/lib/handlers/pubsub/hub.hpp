#pragma once
// One loop's part of a TopicSpace: its sessions by topic, the messages other
// loops handed it, and the sessions with bytes to send this tick.
//
// A publish (any thread, under the space's lock) appends the message to the
// hub's inbox; the first one into an empty inbox posts one drain to the
// loop (a burst costs one wake-up), except on the hub's own loop, whose
// publisher drains right after. The drain runs on the loop: for each
// message, a Piece (one per message per loop: its only reference count
// touched by another thread) goes into each local subscriber's queue, and
// each session with new bytes is marked dirty; one Loop::defer per tick then
// flushes every dirty session with one writev of all it has queued. No lock
// is held, no coroutine woken and nothing allocated per subscriber.

#include "handlers/pubsub/topics.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace weft {
class Loop;
}

namespace weft::handlers::pubsub {

class Session;

// Bytes queued for sessions of one loop: a message (shared with other
// loops), or a control frame of one session's. Its count of users is the
// loop's alone.
struct Piece {
    MessagePtr message; // null: `own` bytes
    std::string own;
    std::uint32_t users = 0;
};

class LoopHub {
public:
    LoopHub(TopicSpace& space, Loop& loop);
    ~LoopHub();
    LoopHub(const LoopHub&) = delete;
    LoopHub& operator=(const LoopHub&) = delete;

    Loop& loop() const { return loop_; }

    // Any thread, under the space's lock: `message` for this loop's
    // subscribers of topic `serial`. `here`: the caller runs on this loop
    // and calls drain() once it has let go of the lock.
    void enqueue(std::uint64_t serial, const MessagePtr& message, bool here);
    // The loop's thread: hands what the inbox holds to the sessions.
    void drain();

    // A session of topic `serial` on this loop, from its join to its end
    // (closing ones too: a stop ends them).
    void add(Session& session, std::uint64_t serial);
    void remove(Session& session, std::uint64_t serial);
    // A session has bytes to send: flushed after this tick's events.
    void mark_dirty(Session& session);
    // A session goes away: it is no longer in the dirty list.
    void forget(Session& session);

    // Sessions alive on this loop (subscribed or closing), for the stop.
    std::size_t sessions() const { return sessions_; }
    void count_session(int delta) {
        sessions_ = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(sessions_) + delta);
    }

    // 16 KiB the loop's sessions read into (what they keep is copied out).
    std::uint8_t* scratch();
    static constexpr std::size_t kScratch = 16 << 10;

    // Every session closes (1001; an event stream ends), and one task keeps
    // the loop running until they are gone or its grace runs out.
    void stop();

private:
    std::vector<Session*> all_sessions() const;
    void end_all();

    struct Delivery {
        std::uint64_t serial;
        MessagePtr message;
    };
    void flush_dirty();

    TopicSpace& space_;
    Loop& loop_;
    std::mutex inbox_mutex_;
    std::vector<Delivery> inbox_; // guarded by inbox_mutex_
    bool drain_pending_ = false;  // guarded: a drain will come (posted, or the publisher's)
    std::vector<Delivery> taken_; // the batch being handed out (loop thread)
    std::unordered_map<std::uint64_t, Session*> topics_; // serial -> its sessions, linked
    std::vector<Session*> dirty_;
    std::vector<Session*> flushing_;
    bool flush_scheduled_ = false;
    std::shared_ptr<TopicSpace> flush_hold_; // while a flush is scheduled
    std::size_t sessions_ = 0;
    std::unique_ptr<std::uint8_t[]> scratch_;
};

} // namespace weft::handlers::pubsub
