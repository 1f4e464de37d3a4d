#include "handlers/pubsub/hub.hpp"

#include "handlers/pubsub/session.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"

#include <algorithm>
#include <chrono>

namespace weft::handlers::pubsub {

namespace {
// A stop ends the sessions still closing this long before its grace does.
constexpr std::chrono::milliseconds kMargin(20);
} // namespace

LoopHub::LoopHub(TopicSpace& space, Loop& loop) : space_(space), loop_(loop) {
    // Never removed: a hub goes with its space, maybe on another thread;
    // the hook then finds the space gone and does nothing.
    loop_.add_stop_hook([space = space_.weak_from_this(), this] {
        if (const std::shared_ptr<TopicSpace> alive = space.lock()) stop();
    });
}

LoopHub::~LoopHub() = default;

std::uint8_t* LoopHub::scratch() {
    if (!scratch_) scratch_.reset(new std::uint8_t[kScratch]);
    return scratch_.get();
}

void LoopHub::enqueue(std::uint64_t serial, const MessagePtr& message, bool here) {
    bool post = false;
    {
        std::lock_guard lock(inbox_mutex_);
        inbox_.push_back({serial, message});
        if (!drain_pending_) {
            drain_pending_ = true;
            post = !here; // else the publisher drains once it lets go of the space
        }
    }
    // The space outlives the call: a posted drain holds it.
    if (post) loop_.post([space = space_.shared_from_this(), this] { drain(); });
}

void LoopHub::drain() {
    {
        std::lock_guard lock(inbox_mutex_);
        taken_.swap(inbox_);
        drain_pending_ = false;
    }
    for (Delivery& delivery : taken_) {
        const auto found = topics_.find(delivery.serial);
        if (found == topics_.end()) continue;
        auto* piece = new Piece{std::move(delivery.message), {}, 0};
        // A session may leave its list while it takes the piece (an event
        // stream whose queue is full ends at once): the next one is in hand.
        for (Session* session = found->second; session;) {
            Session* const next = session->next;
            session->deliver(*piece);
            session = next;
        }
        if (!piece->users) delete piece;
    }
    taken_.clear();
}

void LoopHub::add(Session& session, std::uint64_t serial) {
    Session*& head = topics_[serial];
    session.prev = nullptr;
    session.next = head;
    if (head) head->prev = &session;
    head = &session;
}

void LoopHub::remove(Session& session, std::uint64_t serial) {
    if (session.next) session.next->prev = session.prev;
    if (session.prev) {
        session.prev->next = session.next;
    } else {
        const auto found = topics_.find(serial);
        if (found != topics_.end()) {
            if (session.next)
                found->second = session.next;
            else
                topics_.erase(found);
        }
    }
    session.prev = session.next = nullptr;
}

void LoopHub::mark_dirty(Session& session) {
    session.dirty = true;
    dirty_.push_back(&session);
    if (flush_scheduled_) return;
    flush_scheduled_ = true;
    // The space (and this hub) must outlive the flush: its last session may
    // end this tick, and a reload free its handler. Held here rather than
    // in the call, whose std::function would then allocate each tick.
    flush_hold_ = space_.shared_from_this();
    loop_.defer([this] { flush_dirty(); });
}

void LoopHub::forget(Session& session) {
    if (!session.dirty) return;
    session.dirty = false;
    std::replace(dirty_.begin(), dirty_.end(), &session, static_cast<Session*>(nullptr));
    std::replace(flushing_.begin(), flushing_.end(), &session, static_cast<Session*>(nullptr));
}

void LoopHub::flush_dirty() {
    // Let go of last, when nothing of this hub is touched any more.
    const std::shared_ptr<TopicSpace> hold = std::move(flush_hold_);
    flush_scheduled_ = false;
    flushing_.swap(dirty_);
    for (std::size_t i = 0; i < flushing_.size(); ++i) {
        Session* const session = flushing_[i];
        if (!session) continue; // gone since
        session->dirty = false;
        session->flush(); // may end it: nothing of it is touched after
    }
    flushing_.clear();
}

std::vector<Session*> LoopHub::all_sessions() const {
    std::vector<Session*> sessions;
    for (const auto& [serial, head] : topics_)
        for (Session* session = head; session; session = session->next) sessions.push_back(session);
    return sessions;
}

void LoopHub::stop() {
    // Each may end at once (an event stream), but only itself.
    for (Session* session : all_sessions()) session->stop();
    if (!sessions_) return;
    // With no grace to wait in, what is left ends now: run() would return
    // before a task spawned here ran.
    if (loop_.stop_grace_left() <= kMargin) {
        end_all();
        return;
    }
    // run() returns when no task is left: one task waits for the closes,
    // and ends what is left just before the grace does (or when the loop
    // aborts it).
    loop_.spawn([space = space_.shared_from_this(), this] {
        while (sessions_ && loop_.stop_grace_left() > kMargin)
            if (io::sleep(10) < 0) break;
        end_all();
    });
}

void LoopHub::end_all() {
    for (Session* session : all_sessions()) session->end_now();
}

} // namespace weft::handlers::pubsub
