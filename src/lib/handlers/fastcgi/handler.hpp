#pragma once
// The `fastcgi` handler: a PHP application behind PHP-FPM.
//
// For each request it decides the script itself (scripts.hpp),
// serves static files and directories through a `files` handler of its own
// when `static` is on, and proxies scripts to its upstream: params as nginx
// sends them (params.hpp).
//
// Slow clients hold no PHP worker: the request body is read whole before a
// backend is taken (a Spool, spool.hpp: memory, then a temp file;
// `request_buffering = off` streams it instead), and the response is read
// as fast as PHP writes and sent as fast as the client reads, what lies
// between in a Spool (`buffers` in memory, then up to `max_temp_file_size`
// on disk, then PHP waits); the backend goes back at END_REQUEST. Bytes the
// client's socket takes go at once, so flush() still streams.
// `X-Accel-Buffering: no` and text/event-stream relay unbuffered, with
// backpressure both ways. A whole response in one read goes out in one send.
// One request's trip through the backend is a ScriptCall (script_call.hpp).
//
// While it waits, the coroutine awaits at once the backend's fd, the
// client's (a hang-up ends the request and frees the connection; its
// writability while bytes wait for it) and a timer (read_timeout: 504;
// send_timeout). No connection to be had: 502 at once, or 503 after
// queue_timeout in line.

#include "config/config.hpp"
#include "handlers/build.hpp"
#include "http/handler.hpp"

#include <memory>
#include <string>

namespace weft::handlers {

class FastcgiHandler final : public http::Handler {
public:
    struct State; // the settings create() resolved: state.hpp
    FastcgiHandler(std::unique_ptr<State> state, http::Route route);
    ~FastcgiHandler() override;

    void serve(http::Exchange& exchange) const override;
    std::string describe() const override;

private:
    std::unique_ptr<State> state_;
};

// The handler for `config`: its root defaults to its site's, and it uses
// the named `upstream` (shared) or, with `pass`, one of its own. SERVER_NAME
// is the site's first host, or for a site without one the request's Host.
// nullptr with a one-line reason when the root cannot be opened.
std::unique_ptr<http::Handler> create(const config::FastcgiHandler& config,
                                      const BuildContext& context, std::string& error);

} // namespace weft::handlers
