#include "handlers/build.hpp"

// Each handler kind: one line here.
#include "handlers/fastcgi/handler.hpp"
#include "handlers/files/handler.hpp"
#include "handlers/redirect.hpp"
#include "handlers/response.hpp"

#include <algorithm>
#include <variant>

namespace weft::handlers {

std::string_view BuildContext::root(const std::string& own) const {
    return own.empty() ? std::string_view(site.root) : std::string_view(own);
}

std::string_view BuildContext::site_name() const {
    return site.hosts.empty() ? std::string_view{} : std::string_view(site.hosts.front());
}

fastcgi::Upstream* BuildContext::upstream(std::string_view name) const {
    for (std::size_t i = 0; i < config.upstreams.size() && i < upstreams.size(); ++i)
        if (config.upstreams[i].name == name) return upstreams[i].get();
    return nullptr;
}

std::uint32_t to_ms(std::chrono::milliseconds d) {
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(d.count(), 1, UINT32_MAX));
}

fastcgi::UpstreamOptions upstream_options(const config::Upstream& upstream) {
    fastcgi::UpstreamOptions options;
    options.name = upstream.name;
    options.servers = upstream.servers;
    options.keepalive = upstream.keepalive;
    options.max_conns = upstream.max_conns;
    options.connect_timeout_ms = to_ms(upstream.connect_timeout);
    options.read_timeout_ms = to_ms(upstream.read_timeout);
    options.queue_timeout_ms = to_ms(upstream.queue_timeout);
    // 0 is "never" (no timer), not the 1 ms a clamp would make it.
    options.keepalive_timeout_ms =
        upstream.keepalive_timeout.count() == 0 ? 0 : to_ms(upstream.keepalive_timeout);
    return options;
}

http::ServerOptions server_options(const config::Config& config) {
    http::ServerOptions options;
    options.request_timeout_ms = to_ms(config.request_timeout);
    options.keep_alive_timeout_ms = to_ms(config.keep_alive_timeout);
    options.body_timeout_ms = to_ms(config.body_timeout);
    options.send_timeout_ms = to_ms(config.send_timeout);
    options.max_request_body = config.max_request_body;
    return options;
}

std::optional<http::Route> route(const config::Route& route, std::string& error) {
    switch (route.kind) {
    case config::Route::Kind::prefix:
        return http::Route::prefix(route.path);
    case config::Route::Kind::exact:
        return http::Route::exact(route.path);
    case config::Route::Kind::pattern:
        break;
    }
    std::optional<http::Route> pattern = http::Route::from_pattern(route.path, error);
    if (!pattern) error = "route " + route.path + ": " + error;
    return pattern;
}

std::unique_ptr<http::Handler> build_handler(const config::Handler& handler,
                                             const BuildContext& context, std::string& error) {
    // A kind without its create() does not compile.
    return std::visit([&](const auto& h) { return create(h, context, error); }, handler);
}

} // namespace weft::handlers
