#pragma once
// Waiting on something for a request while its client may hang up: the pool's
// queue and the backend's socket are each awaited together with the
// client's fd, so a client that leaves ends the wait at once.
//
// The watch is for the client's end of stream and errors, not its bytes: its
// next request (pipelining) does not wake it. A client whose side is shut is
// not always gone either: it may have sent a next request before the end. A
// peek tells when that request is still in the socket; when the connection
// read it already (or this request came so, behind an earlier one), only the
// connection knows: `pipelined` asks it. For such a client the watch stops,
// and only a failed write to it tells from then on.

#include "event/event.hpp"
#include "event/poll_event.hpp"
#include "event/waker.hpp"

#include <cstdint>
#include <optional>

namespace weft::fastcgi {

class ClientWatch {
public:
    // Whether the client sent its request in a pipeline, the connection's
    // buffer included (http::Exchange::in_pipeline).
    using Pipelined = bool (*)(const void* context);

    explicit ClientWatch(PollProxy& client, Pipelined pipelined = nullptr,
                         const void* context = nullptr)
        : client_(client), pipelined_(pipelined), context_(context) {}
    ClientWatch(const ClientWatch&) = delete;
    ClientWatch& operator=(const ClientWatch&) = delete;

    // Waits for `event`, at most `timeout_ms` in all: 0 when it fired, or
    // -ECONNABORTED (the client hung up), -ETIMEDOUT, -ECANCELED, or an
    // error the loop woke the wait with. While the client is the task's own
    // connection and watched, a direct wait (event/direct_wait.hpp); else
    // a Waker's, with a PollEvent for a client that is not the task's.
    int await(Event& event, std::uint32_t timeout_ms);
    // The same for readiness (`interest`) on `fd`, or its hang-up.
    int await(PollProxy& fd, std::uint8_t interest, std::uint32_t timeout_ms);

    // For a wait on more than one event (the relay's): join() adds the
    // client's end to `waker` while it is watched (the loop watches the
    // task's own connection itself; any other client, an event), and
    // verdict() tells what the wait's result says of the client.
    enum class Verdict : std::uint8_t {
        other,   // not the client's end: the wait's own business
        gone,    // the client left: the request ends
        watching // no more: its end came behind a pipelined request, or the
                 // loop could not watch it; only a failed write tells now
    };
    // In line (below): both are on every wait of a PHP request, and as
    // calls they cost it 48 instructions.
    void join(Waker& waker);
    Verdict verdict(const AwaitResult& woke);

private:
    // Its side is shut and nothing it sent before the end waits.
    bool gone(int fd) const;
    // The loop saw the client's end before the wait: it is gone. (In line,
    // as direct(): on every wait of a PHP request, as calls they cost it
    // about 30 instructions.)
    bool left_before() const;
    // Whether the wait may be direct: the client is the task's own
    // connection, and watched.
    bool direct() const;
    // What a direct wait that did not fire returns: 0 when it goes on,
    // without the watch, through a Waker (the client's end came behind a
    // pipelined request, or the loop could not watch it).
    int end_of_direct(std::int64_t woke);
    int await_waker(Event& event, std::uint32_t timeout_ms);

    PollProxy& client_;
    // The end of a client that is not the task's own connection, one event
    // for every wait of the request (each await starts and stops it).
    std::optional<PollEvent> hangup_;
    Pipelined pipelined_;
    const void* context_;
    bool watching_ = true;
    bool own_ = false;      // the last join() left it to the loop
    int hangup_index_ = -1; // else hangup_'s index in that wait, or -1
};

// --- in line -------------------------------------------------------------

inline bool ClientWatch::left_before() const {
    // A hang-up the loop saw before this watch began raises no new edge.
    const int fd = client_.fd();
    return watching_ && (Loop::current()->table()[fd].ready & (kPeerClosed | kHungUp)) && gone(fd);
}

inline bool ClientWatch::direct() const {
    return watching_ && Loop::current_task()->fd == client_.fd();
}

inline void ClientWatch::join(Waker& waker) {
    hangup_index_ = -1;
    // The client is nearly always the task's own connection, whose end the
    // loop watches itself; any other needs an event.
    own_ = Loop::current_task()->fd == client_.fd();
    if (!watching_) return;
    if (own_) {
        waker.resume_when_peer_ends();
        return;
    }
    if (!hangup_) hangup_.emplace(client_, kPeerClosed);
    hangup_index_ = waker.resume_when(*hangup_);
}

inline ClientWatch::Verdict ClientWatch::verdict(const AwaitResult& woke) {
    if (!watching_) return Verdict::other;
    const bool ended = own_ ? woke.index == AwaitResult::kPeerEnd : woke.index == hangup_index_;
    // Its side is shut: gone, unless a next request came before the end
    // (pipelined, then a half-close). Or the loop could not watch the end
    // (epoll refused): as a watch that stopped.
    if (ended && gone(client_.fd())) return Verdict::gone;
    if (ended || (own_ && woke.index == AwaitResult::kError)) {
        watching_ = false;
        return Verdict::watching;
    }
    return Verdict::other;
}

} // namespace weft::fastcgi
