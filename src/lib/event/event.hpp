#pragma once
// Event: the base of everything a coroutine can await (docs/architecture.md,
// "Events and wakers").
//
// Subscribers are Callback nodes that live with the subscriber (a Waker keeps
// its own inline), so subscribing allocates nothing for the first two.
// The list is safe to change while the event notifies: it is kept in three
// regions, [visited | not yet visited | added meanwhile], and removal moves
// entries between regions so that nothing is skipped or run twice, and a
// callback added during a notification waits for the next one.
//
// Lifetime: an event made with Event::make<T>() is reference counted and
// deleted when the last reference goes (dispose() gives up the creator's);
// one on a stack or inside another object just must outlive its
// subscribers. Notification holds a reference, so a callback may dispose
// the event that calls it.
//
// start()/stop() are counted: the first start really starts the event (arms
// its timer, watches its fd) and the last stop really stops it. A stop with
// nothing started does nothing; callers keep their own start/stop paired
// (the Waker does, per subscription), so no caller can stop another's start.
// The loop's EventState counts the started loop handles (kLoopHandle) that
// can still fire: a completed one cannot.

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weft {

class Event;
class Loop;

struct Callback {
    using Fn = void (*)(Callback& self, Event& event, std::int64_t result);
    Fn fn = nullptr;
    Event* event = nullptr;  // what it is subscribed to, or null
    std::uint32_t index = 0; // its place in that event's list
};

class CallbackList {
public:
    void add(Callback& callback);
    void remove(Callback& callback) {
        // In line, the common cases: the only one leaves (notifying or not:
        // every region is empty then), or the last one while nobody
        // notifies (a Waker letting go of an event that did not fire).
        if (size_ == 1) {
            size_ = visited_ = end_ = 0;
            callback.event = nullptr;
            return;
        }
        if (!notifying_ && callback.index + 1 == size_ && size_ <= kInline) {
            --size_;
            callback.event = nullptr;
            return;
        }
        remove_moving(callback);
    }
    // Calls fn(callback) for each callback present when it starts and not
    // removed before its turn. Not reentrant (Event::notify queues instead).
    template <class F>
    void notify_each(F&& fn);
    std::uint32_t size() const { return size_; }
    bool notifying() const { return notifying_; }

private:
    static constexpr std::uint32_t kInline = 2;
    // Any other removal: another entry fills the hole (see the header).
    void remove_moving(Callback& callback);
    Callback*& at(std::uint32_t i) { return i < kInline ? inline_[i] : spill_[i - kInline]; }
    void place(std::uint32_t i, Callback* callback) {
        at(i) = callback;
        callback->index = i;
    }

    Callback* inline_[kInline] = {};
    std::vector<Callback*> spill_;
    std::uint32_t size_ = 0;
    std::uint32_t visited_ = 0; // while notifying: [0, visited_) had their turn
    std::uint32_t end_ = 0;     // while notifying: [end_, size_) came meanwhile
    bool notifying_ = false;
};

class Event {
public:
    enum Flag : std::uint16_t {
        kClosed = 1,    // will not fire again
        kHidden = 2,    // does not count as work for deadlock detection
        kCompleted = 4, // fired for good: late subscribers get the result at once
        kHeap = 8,      // made by make(): deleted when the last reference goes
        kDisposed = 16,
        // Backed by the loop (a timer, an fd, a signal, a trigger): it can
        // fire with no coroutine acting, so while started it is a way out of
        // a deadlock. Futures, channels and completions are not.
        kLoopHandle = 32,
    };
    // Sees (and may change) a result before the subscribers do.
    using NotifyHook = void (*)(Event& event, std::int64_t& result, void* data);

    explicit Event(Loop& loop, std::uint16_t flags = 0);
    virtual ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    template <class T, class... Args>
    static T* make(Args&&... args) {
        T* event = new T(std::forward<Args>(args)...);
        event->flags_ |= kHeap;
        event->heap_ = true;
        return event;
    }

    // A completed or closed event replays its result to the new subscriber
    // at once; an event that is ready now (a channel with items) says so at
    // once too. Otherwise the callback runs when the event fires.
    void subscribe(Callback& callback);
    // Idempotent; safe during notification.
    void unsubscribe(Callback& callback) {
        if (callback.event == this) callbacks_.remove(callback);
    }

    void start();
    void stop();

    void retain() { refs_.fetch_add(1, std::memory_order_relaxed); }
    void release();
    // Closes, stops for good and gives up the creator's reference; idempotent.
    void dispose();
    // Fires for good with an error (-EPIPE unless told): wakes every subscriber.
    void close(std::int64_t result = -EPIPE);

    // One line for debugging: what it is and its state.
    virtual std::string info() const;

    void set_notify_hook(NotifyHook hook, void* data) {
        hook_ = hook;
        hook_data_ = data;
    }

    // One direct wait (event/direct_wait.hpp) at a time may hear the event
    // without a subscription: told of each notification before the
    // subscribers. Null: none.
    Callback* direct() const { return direct_; }
    void set_direct(Callback* wait) { direct_ = wait; }
    // What subscribe() would tell a new subscriber at once: the result of a
    // completed or closed event, or of one ready now. False: it must wait.
    bool answers_now(std::int64_t& result) {
        if (flags_ & (kCompleted | kClosed)) {
            result = result_;
            return true;
        }
        return ready_now(result);
    }

    Loop& loop() const { return loop_; }
    bool has(Flag flag) const { return flags_ & flag; }
    bool started() const { return starts_ > 0; }
    std::int64_t result() const { return result_; }
    std::uint32_t subscribers() const { return callbacks_.size(); }
    // Whether a notification would reach anyone: a subscriber, or the
    // direct wait.
    bool heard() const { return callbacks_.size() != 0 || direct_ != nullptr; }
    // Nobody but the caller holds a reference to it (a heap event).
    bool only_reference() const { return refs_.load(std::memory_order_acquire) == 1; }

protected:
    // Runs every subscriber once with `result`.
    void notify(std::int64_t result);
    // notify(), then keep the result for late subscribers.
    void complete(std::int64_t result);
    // For level-triggered events: true (and the result) if ready now.
    virtual bool ready_now(std::int64_t& result) {
        (void)result;
        return false;
    }
    // For an event used again: it has not fired yet. Only while nobody is
    // subscribed or has started it.
    void reopen() {
        flags_ &= static_cast<std::uint16_t>(~(kCompleted | kClosed));
        result_ = 0;
    }
    virtual void on_start() {}
    virtual void on_stop() {}
    std::string describe(const char* kind) const;

private:
    Loop& loop_;
    CallbackList callbacks_;
    Callback* direct_ = nullptr;
    std::atomic<std::uint32_t> refs_{1};
    std::uint32_t starts_ = 0;
    std::int64_t result_ = 0;
    NotifyHook hook_ = nullptr;
    void* hook_data_ = nullptr;
    std::vector<std::int64_t> reentrant_; // results notified from inside a notification
    std::uint16_t flags_;
    bool heap_ = false; // kHeap, set before the event is shared: release() reads
                        // it from any thread, where flags_ may be changing
};

// A counted reference to an event made by Event::make.
template <class T>
class Ref {
public:
    Ref() = default;
    // Adopts a reference the caller already holds.
    static Ref adopt(T* event) {
        Ref r;
        r.event_ = event;
        return r;
    }
    Ref(const Ref& other) : event_(other.event_) {
        if (event_) event_->retain();
    }
    Ref(Ref&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
    Ref& operator=(Ref other) {
        std::swap(event_, other.event_);
        return *this;
    }
    ~Ref() {
        if (event_) event_->release();
    }
    T* get() const { return event_; }
    T* operator->() const { return event_; }
    T& operator*() const { return *event_; }
    explicit operator bool() const { return event_ != nullptr; }

private:
    T* event_ = nullptr;
};

template <class F>
void CallbackList::notify_each(F&& fn) {
    notifying_ = true;
    visited_ = 0;
    end_ = size_;
    while (visited_ < end_) {
        Callback* callback = at(visited_++);
        fn(*callback);
    }
    notifying_ = false;
}

} // namespace weft
