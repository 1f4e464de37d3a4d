#include "fastcgi/client_watch.hpp"

#include "event/poll_event.hpp"
#include "event/waker.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"

namespace weft::fastcgi {

bool ClientWatch::gone(int fd) const {
    return io::peer_state(fd) == io::PeerState::closed && !(pipelined_ && pipelined_(context_));
}

int ClientWatch::await(PollProxy& fd, std::uint8_t interest, std::uint32_t timeout_ms) {
    Loop& loop = *Loop::current();
    const int client = client_.fd();
    if (!watching_ || Loop::current_task()->fd != client) {
        PollEvent event(fd, interest);
        return await(event, timeout_ms);
    }
    if (loop.table()[client].ready & (kPeerClosed | kHungUp) && gone(client)) return -ECONNABORTED;
    const std::uint64_t deadline = loop.now() + timeout_ms;
    std::int64_t woke = 0;
    {
        PollProxy::DirectWait wait(fd, interest); // gone before the PollEvent below
        if (wait.error()) return wait.error();
        woke = wait.wait(timeout_ms, true);
        if (wait.fired()) return 0;
    }
    if (woke == -ETIMEDOUT || woke == -ECANCELED) return static_cast<int>(woke);
    // The client's end, or the loop could not watch it: gone,
    // or it sent a next request before its end, and the wait goes on
    // without the watch (verdict()), through a PollEvent.
    if ((woke > 0 || woke == kHangup) && gone(client)) return -ECONNABORTED;
    watching_ = false;
    const std::uint64_t now = loop.now();
    return await(fd, interest, static_cast<std::uint32_t>(deadline > now ? deadline - now : 0));
}

int ClientWatch::await(Event& event, std::uint32_t timeout_ms) {
    Loop& loop = *Loop::current();
    const int fd = client_.fd();
    // A hang-up the loop saw before this watch began raises no new edge.
    if (watching_ && (loop.table()[fd].ready & (kPeerClosed | kHungUp)) && gone(fd))
        return -ECONNABORTED;
    const std::uint64_t deadline = loop.now() + timeout_ms;
    for (;;) {
        const std::int64_t left =
            deadline > loop.now() ? static_cast<std::int64_t>(deadline - loop.now()) : 0;
        Waker waker(Waker::Mode::any, 2);
        waker.resume_when(event);
        join(waker);
        const AwaitResult woke = waker.wait(left);
        switch (verdict(woke)) {
        case Verdict::gone:
            return -ECONNABORTED;
        case Verdict::watching:
            continue;
        case Verdict::other:
            break;
        }
        if (woke.index == AwaitResult::kTimeout) return -ETIMEDOUT;
        if (woke.index == AwaitResult::kCancelled) return -ECANCELED;
        if (woke.index == AwaitResult::kError)
            return woke.value < 0 ? static_cast<int>(woke.value) : -EIO;
        return 0;
    }
}

} // namespace weft::fastcgi
