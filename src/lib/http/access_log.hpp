#pragma once
// The access log, in the combined format nginx and Apache write:
//   addr peer - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 2326 "referer" "agent"
// `addr` is the request's client: the peer, or the client a trusted proxy's
// forwarding header (real_ip_from) or a PROXY protocol header named. `peer`
// (identd's field, "-" in nginx's) is then the TCP peer the client came
// through, the proxy; "-" when the client is the TCP peer.
// The third field is $remote_user: the name Basic authentication let in.
// A session that outlived its request (a WebSocket, an event stream:
// http/session_log.hpp) writes its line when it ends, with the status of its
// hand-over (101, 200), the bytes it sent, and one more quoted field after
// the agent saying why it ended: ... "agent" "ws 1000 closed by client".
//
// Each loop thread formats lines into its own buffer and writes whole
// buffers with one write(2) (the file is opened O_APPEND, so lines of
// different threads never interleave): when the buffer fills, a second after
// its first line, and when the thread ends. SIGUSR1 reopens the file.
// A buffer holding lines of a log shared by shared_ptr holds a reference to
// it until they are written: a session's line written after a reload freed
// its server keeps the log open until it is out.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace weft::http {

struct AccessLogEntry {
    std::string_view remote;       // the client's address, as text
    std::string_view peer;         // the TCP peer, when not the client; else empty ("-")
    std::string_view remote_user;  // who Basic authentication let in, or empty
    std::string_view request_line; // as received
    int status;
    std::uint64_t body_bytes;
    std::string_view referer;
    std::string_view user_agent;
    std::string_view note; // a session's end; empty: no such field
};

class AccessLog : public std::enable_shared_from_this<AccessLog> {
public:
    // Opens `target`: "stderr" or a file path (created 0640, appended to);
    // nullptr-like failure: ok() false and `error` says why.
    AccessLog(std::string target, std::string& error);
    ~AccessLog();
    AccessLog(const AccessLog&) = delete;
    AccessLog& operator=(const AccessLog&) = delete;

    bool ok() const { return fd_ >= 0; }
    const std::string& target() const { return target_; }
    void write(const AccessLogEntry& entry);
    // Writes out this thread's buffered lines.
    void flush_this_thread();
    // Gives the file to uid:gid (util/log_file.hpp; before a privilege drop).
    int give_to(unsigned uid, unsigned gid);
    // Reopens the file in place (log rotation); any thread. 0 or -errno.
    int reopen();

private:
    std::string target_;
    int fd_ = -1;
};

} // namespace weft::http
