#pragma once
// Waiting on something for a request while its client may hang up: the pool's
// queue and the backend's socket are each awaited together with the
// client's fd, so a client that leaves ends the wait at once.
//
// A readable client is not always gone: it may have sent its next request
// (pipelining). A peek tells; for a pipelined one the watch stops, and only a
// failed write to it tells from then on.

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
