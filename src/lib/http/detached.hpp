#pragma once
// What takes over a handed-over connection for good (a WebSocket or an event
// stream that outlives its request): no coroutine, no stack, only loop
// callbacks.
//
// After Exchange::switch_protocols() or stream_to_close(), the handler gives
// the Exchange a Detached (Exchange::detach). When serve() returns, the
// Connection counts the request, calls start() (still on the connection's
// coroutine) and ends the task with Op::detach. start() attaches the
// session's FdWatcher to the fd (Loop::watch_fd(fd, watcher, kReadable |
// kWritable)) and does no I/O: right after the detach, the loop calls the
// watcher's on_ready once with kReadable | kWritable (the connection may have
// left bytes in the socket, or room to write, that raise no new edge), and
// from that call on the session owns the fd: it closes it with
// Loop::close_fd and deletes itself. (Before it, the fd is still the
// connection's: close_fd would assert.) A start() that attaches no watcher
// has the loop close the fd.
//
// What the handler must copy before serve() returns, because it lives in
// the connection's frame: HandOver::received, and whatever of the request it
// needs (the SessionLog copies what the access log needs).
//
// A route's limit_conn counts the session for its life (keep()).
//
// `log` is null when the server has no access log; it keeps the log open
// after a reload freed the server (session_log.hpp). If the loop is stopping
// (Loop::stopping()), the session is started all the same and should close
// at once.

#include <memory>

namespace weft::http {

class SessionLog;
class LimitHold;

class Detached {
public:
    virtual ~Detached() = default;
    virtual void start(std::unique_ptr<SessionLog> log) = 0;
    // The route's limit_conn count, held until the session ends; before
    // start(), when the route has one.
    virtual void keep(std::unique_ptr<LimitHold> count) = 0;
};

} // namespace weft::http
