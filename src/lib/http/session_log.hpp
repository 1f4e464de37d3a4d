#pragma once
// The access-log line of a connection that outlived its request (a
// Detached: a WebSocket, an event stream), written when the session ends:
// the request's fields, copied when it was handed over, with the status and
// the bytes the session sent, and a note saying why it ended
// ("ws 1000 closed by client", "sse queue full").
//
// It shares the AccessLog: a reload that frees the server does not close the
// log under a session still connected.

#include "http/access_log.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace weft::http {

class SessionLog {
public:
    // Copies the entry's strings (its status, bytes and note are write()'s).
    SessionLog(std::shared_ptr<AccessLog> log, const AccessLogEntry& request);
    SessionLog(const SessionLog&) = delete;
    SessionLog& operator=(const SessionLog&) = delete;

    // One line; call it once, on the session's loop.
    void write(int status, std::uint64_t body_bytes, std::string_view note);

private:
    std::shared_ptr<AccessLog> log_;
    // The six fields, one after another, and where each ends.
    std::string fields_;
    std::uint32_t ends_[6];
};

} // namespace weft::http
