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
    // error the loop woke the wait with.
    int await(Event& event, std::uint32_t timeout_ms);

private:
    // Its side is shut and nothing it sent before the end waits.
    bool gone(int fd) const;

    PollProxy& client_;
    // The end of a client that is not the task's own connection, one event
    // for every wait of the request (each await starts and stops it).
    std::optional<PollEvent> hangup_;
    Pipelined pipelined_;
    const void* context_;
    bool watching_ = true;
};

} // namespace weft::fastcgi
