#pragma once
// The `fastcgi` handler: a PHP application behind PHP-FPM (DESIGN.md §6-7).
//
// For each request it decides the script itself (fastcgi_scripts.hpp),
// serves static files and directories through a `files` handler of its own
// when `static` is on, and proxies scripts to its upstream: params as nginx
// sends them (fastcgi_params.hpp).
//
// Slow clients hold no PHP worker: the request body is read whole before a
// backend is taken (a Spool, fastcgi_spool.hpp: memory, then a temp file;
// `request_buffering = off` streams it instead), and the response is read
// as fast as PHP writes and sent as fast as the client reads, what lies
// between in a Spool (`buffers` in memory, then up to `max_temp_file_size`
// on disk, then PHP waits); the backend goes back at END_REQUEST. Bytes the
// client's socket takes go at once, so flush() still streams.
// `X-Accel-Buffering: no` and text/event-stream relay unbuffered, with
// backpressure both ways. A whole response in one read goes out in one send.
//
// While it waits, the coroutine awaits at once the backend's fd, the
// client's (a hang-up ends the request and frees the connection; its
// writability while bytes wait for it) and a timer (read_timeout: 504;
// send_timeout). No connection to be had: 502 at once, or 503 after
// queue_timeout in line.

#include "config/config.hpp"
#include "fastcgi/upstream.hpp"
#include "http/handler.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace weft::handlers {

class FastcgiHandler final : public http::Handler {
public:
    // The handler for `config`: its root defaults to `site_root`, and it
    // uses `upstream` (a named upstream, shared) or, with `pass`, one of its
    // own. SERVER_NAME is `site_name` (the site's first host), or for a site
    // without one the request's Host. nullptr with a one-line reason when
    // the root cannot be opened.
    static std::unique_ptr<FastcgiHandler> create(const config::FastcgiHandler& config,
                                                  std::string_view site_root,
                                                  fastcgi::Upstream* upstream, std::string& error,
                                                  std::string_view site_name = {});
    ~FastcgiHandler() override;

    void serve(http::Exchange& exchange) const override;

    struct State;

private:
    FastcgiHandler(std::unique_ptr<State> state, std::string prefix);
    std::unique_ptr<State> state_;
};

// The options of an `upstream` section.
fastcgi::UpstreamOptions upstream_options(const config::Upstream& upstream);

} // namespace weft::handlers
