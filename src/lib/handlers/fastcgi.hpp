#pragma once
// The `fastcgi` handler: a PHP application behind PHP-FPM (DESIGN.md §6-7).
//
// For each request it decides the script itself (fastcgi_scripts.hpp),
// serves static files and directories through a `files` handler of its own
// when `static` is on, and proxies scripts to its upstream: params as nginx
// sends them (fastcgi_params.hpp), the request body streamed as it arrives
// (a chunked one de-chunked first, past a few KiB into an unlinked temp file,
// so CONTENT_LENGTH is exact), and the response streamed back through
// bounded buffers with backpressure both ways.
//
// While it waits on the backend the coroutine awaits at once the backend's
// fd, the client's (a hang-up ends the request and frees the connection)
// and a timer (read_timeout: 504). No connection to be had: 502 at once, or
// 503 after queue_timeout in line.

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
