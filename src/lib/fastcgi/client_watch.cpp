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
