#include "fastcgi/client_watch.hpp"

#include "event/direct_wait.hpp"
#include "event/poll_event.hpp"
#include "event/waker.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"

namespace weft::fastcgi {

namespace {

std::uint32_t left_until(std::uint64_t deadline) {
    const std::uint64_t now = Loop::current()->now();
    return static_cast<std::uint32_t>(deadline > now ? deadline - now : 0);
}

} // namespace

bool ClientWatch::gone(int fd) const {
    return io::peer_state(fd) == io::PeerState::closed && !(pipelined_ && pipelined_(context_));
}

int ClientWatch::end_of_direct(std::int64_t woke) {
    if (woke == -ETIMEDOUT || woke == -ECANCELED) return static_cast<int>(woke);
    // The client's end, or the loop could not watch it: gone, or it sent a
    // next request before its end, and the wait goes on without the watch
    // (as verdict() has it), through a Waker.
    if ((woke > 0 || woke == kHangup) && gone(client_.fd())) return -ECONNABORTED;
    watching_ = false;
    return 0;
}

int ClientWatch::await(PollProxy& fd, std::uint8_t interest, std::uint32_t timeout_ms) {
    if (left_before()) return -ECONNABORTED;
    if (direct()) {
        const std::uint64_t deadline = Loop::current()->now() + timeout_ms;
        PollProxy::DirectWait wait(fd, interest);
        if (wait.error()) return wait.error();
        const std::int64_t woke = wait.wait(timeout_ms, true);
        if (wait.fired()) return 0;
        if (const int end = end_of_direct(woke)) return end;
        timeout_ms = left_until(deadline);
    } // the DirectWait gone: the PollEvent below takes the readiness
    PollEvent event(fd, interest);
    return await_waker(event, timeout_ms);
}

int ClientWatch::await(Event& event, std::uint32_t timeout_ms) {
    if (left_before()) return -ECONNABORTED;
    if (direct()) {
        const std::uint64_t deadline = Loop::current()->now() + timeout_ms;
        EventWait wait(event);
        const std::int64_t woke = wait.wait(timeout_ms, true);
        if (wait.fired()) return 0;
        if (const int end = end_of_direct(woke)) return end;
        timeout_ms = left_until(deadline);
    }
    return await_waker(event, timeout_ms);
}

int ClientWatch::await_waker(Event& event, std::uint32_t timeout_ms) {
    const std::uint64_t deadline = Loop::current()->now() + timeout_ms;
    for (;;) {
        Waker waker(Waker::Mode::any, 2);
        waker.resume_when(event);
        join(waker);
        const AwaitResult woke = waker.wait(left_until(deadline));
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
