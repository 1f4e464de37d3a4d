#include "build_server.hpp"

#include "handlers/build.hpp"

namespace weft {

std::unique_ptr<BuiltServer> build_server(const config::Config& config, std::string& error,
                                          Build purpose) {
    auto built = std::make_unique<BuiltServer>();
    built->server.options = handlers::server_options(config);
    for (const config::Upstream& upstream : config.upstreams)
        built->upstreams.push_back(
            std::make_unique<fastcgi::Upstream>(handlers::upstream_options(upstream)));
    for (const config::Site& site : config.sites) {
        const handlers::BuildContext context{config, site, built->upstreams,
                                             purpose == Build::serving};
        http::Router::Site routed;
        routed.hosts = site.hosts;
        for (const config::Handler& h : site.handlers) {
            std::unique_ptr<http::Handler> handler = handlers::build_handler(h, context, error);
            if (!handler) return nullptr;
            built->handlers.push_back(handler.get());
            routed.handlers.push_back(std::move(handler));
        }
        if (!handlers::build_response_rules(nullptr, context, routed.rules, error)) return nullptr;
        built->server.router.add_site(std::move(routed));
    }
    if (purpose == Build::serving && config.access_log != "off") {
        built->access_log = std::make_unique<http::AccessLog>(config.access_log, error);
        if (!built->access_log->ok()) return nullptr;
        built->server.access_log = built->access_log.get();
    }
    return built;
}

} // namespace weft
