#include "fastcgi/client_watch.hpp"

#include "event/waker.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"

namespace weft::fastcgi {

bool ClientWatch::gone(int fd) const {
    return io::peer_state(fd) == io::PeerState::closed && !(pipelined_ && pipelined_(context_));
}

int ClientWatch::await(Event& event, std::uint32_t timeout_ms) {
    Loop& loop = *Loop::current();
    const int fd = client_.fd();
    // A hang-up the loop saw before this watch began raises no new edge.
    if (watching_ && (loop.table()[fd].ready & (kPeerClosed | kHungUp)) && gone(fd))
        return -ECONNABORTED;
    // The client is nearly always the task's own connection, whose end the
    // loop watches itself; any other needs an event.
    const bool own = Loop::current_task()->fd == fd;
    const std::uint64_t deadline = loop.now() + timeout_ms;
    for (;;) {
        const std::int64_t left =
            deadline > loop.now() ? static_cast<std::int64_t>(deadline - loop.now()) : 0;
        Waker waker(Waker::Mode::any, 2);
        waker.resume_when(event);
        if (watching_ && own) {
            waker.resume_when_peer_ends();
        } else if (watching_) {
            if (!hangup_) hangup_.emplace(client_, kPeerClosed);
            waker.resume_when(*hangup_);
        }
        const AwaitResult woke = waker.wait(left);
        if (woke.index == AwaitResult::kPeerEnd || woke.index == 1) {
            // Its side is shut: gone, unless a next request came before
            // the end (pipelined, then a half-close): only a failed write
            // tells from then on.
            if (gone(fd)) return -ECONNABORTED;
            watching_ = false;
            continue;
        }
        if (woke.index == AwaitResult::kError && watching_ && own) {
            // The loop could not watch its end (epoll refused): as a watch
            // that stopped, only a failed write tells from then on.
            watching_ = false;
            continue;
        }
        if (woke.index == AwaitResult::kTimeout) return -ETIMEDOUT;
        if (woke.index == AwaitResult::kCancelled) return -ECANCELED;
        if (woke.index == AwaitResult::kError)
            return woke.value < 0 ? static_cast<int>(woke.value) : -EIO;
        return 0;
    }
}

} // namespace weft::fastcgi
