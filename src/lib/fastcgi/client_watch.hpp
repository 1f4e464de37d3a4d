#pragma once
// Waiting on something for a request while its client may hang up: the pool's
// queue and the backend's socket are each awaited together with the
// client's fd, so a client that leaves ends the wait at once.
//
// The watch is for the client's end of stream and errors, not its bytes: its
// next request (pipelining) does not wake it. A client whose side is shut is
// not always gone either: it may have sent a next request before the end. A
// peek tells; for such a one the watch stops, and only a failed write to it
// tells from then on.

#include "event/event.hpp"
#include "event/poll_event.hpp"

#include <cstdint>

namespace weft::fastcgi {

class ClientWatch {
public:
    explicit ClientWatch(PollProxy& client) : client_(client) {}

    // Waits for `event`, at most `timeout_ms` in all: 0 when it fired, or
    // -ECONNABORTED (the client hung up), -ETIMEDOUT, -ECANCELED.
    int await(Event& event, std::uint32_t timeout_ms);

private:
    PollProxy& client_;
    bool watching_ = true;
};

} // namespace weft::fastcgi
