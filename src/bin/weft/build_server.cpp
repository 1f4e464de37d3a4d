#include "build_server.hpp"

#include "handlers/fastcgi/handler.hpp"
#include "handlers/files/handler.hpp"
#include "handlers/redirect.hpp"
#include "handlers/response.hpp"

#include <algorithm>
#include <cctype>
#include <variant>

namespace weft {

namespace {

std::uint32_t to_ms(std::chrono::milliseconds d) {
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(d.count(), 1, UINT32_MAX));
}

std::unique_ptr<http::Handler> build_handler(const config::Handler& handler,
                                             const config::Site& site, BuiltServer& built,
                                             const config::Config& config, std::string& error) {
    return std::visit(
        [&](const auto& h) -> std::unique_ptr<http::Handler> {
            using T = std::decay_t<decltype(h)>;
            if constexpr (std::is_same_v<T, config::ResponseHandler>) {
                return std::make_unique<handlers::ResponseHandler>(h);
            } else if constexpr (std::is_same_v<T, config::RedirectHandler>) {
                return std::make_unique<handlers::RedirectHandler>(h);
            } else if constexpr (std::is_same_v<T, config::FilesHandler>) {
                return handlers::FilesHandler::create(h, site.root, error);
            } else {
                fastcgi::Upstream* upstream = nullptr;
                for (std::size_t i = 0; i < config.upstreams.size(); ++i)
                    if (config.upstreams[i].name == h.upstream) upstream = built.upstreams[i].get();
                return handlers::FastcgiHandler::create(h, site.root, upstream, error,
                                                        site.hosts.empty() ? std::string_view{}
                                                                           : site.hosts.front());
            }
        },
        handler);
}

} // namespace

std::unique_ptr<BuiltServer> build_server(const config::Config& config, std::string& error) {
    auto built = std::make_unique<BuiltServer>();
    http::ServerOptions& options = built->server.options;
    options.request_timeout_ms = to_ms(config.request_timeout);
    options.keep_alive_timeout_ms = to_ms(config.keep_alive_timeout);
    options.body_timeout_ms = to_ms(config.body_timeout);
    options.send_timeout_ms = to_ms(config.send_timeout);
    options.max_request_body = config.max_request_body;
    for (const config::Upstream& upstream : config.upstreams)
        built->upstreams.push_back(
            std::make_unique<fastcgi::Upstream>(handlers::upstream_options(upstream)));
    for (const config::Site& site : config.sites) {
        http::Router::Site routed;
        for (std::string host : site.hosts) {
            std::transform(host.begin(), host.end(), host.begin(),
                           [](unsigned char c) { return std::tolower(c); });
            routed.hosts.push_back(std::move(host));
        }
        for (const config::Handler& h : site.handlers) {
            std::unique_ptr<http::Handler> handler = build_handler(h, site, *built, config, error);
            if (!handler) return nullptr;
            routed.handlers.push_back(std::move(handler));
        }
        built->server.router.add_site(std::move(routed));
    }
    if (config.access_log != "off") {
        built->access_log = std::make_unique<http::AccessLog>(config.access_log, error);
        if (!built->access_log->ok()) return nullptr;
        built->server.access_log = built->access_log.get();
    }
    return built;
}

} // namespace weft
