#include "build_server.hpp"

#include "handlers/build.hpp"

#include <cstdio>

namespace weft {

std::unique_ptr<BuiltServer> build_server(const config::Config& config, std::string& error,
                                          Build purpose, fastcgi::UpstreamPools* pools) {
    auto built = std::make_unique<BuiltServer>();
    built->server.options = handlers::server_options(config);
    for (const config::Upstream& upstream : config.upstreams) {
        const fastcgi::UpstreamOptions options = handlers::upstream_options(upstream);
        built->upstreams.push_back(pools ? pools->get(options)
                                         : std::make_shared<fastcgi::Upstream>(options));
    }
    const std::shared_ptr<LimitTable> limits = handlers::limit_table(config);
    for (const config::Site& site : config.sites) {
        const handlers::BuildContext context{
            config, site, built->upstreams, purpose == Build::serving, {}, pools, {}, limits};
        http::Router::Site routed;
        routed.hosts = site.hosts;
        for (const config::Handler& h : site.handlers) {
            std::unique_ptr<http::Handler> handler = handlers::build_handler(h, context, error);
            if (!handler) return nullptr;
            built->handlers.push_back(handler.get());
            routed.handlers.push_back(std::move(handler));
        }
        if (!handlers::build_response_rules(nullptr, context, routed.rules, error)) return nullptr;
        routed.access = handlers::build_access(nullptr, context);
        routed.auth = handlers::build_auth(nullptr, context);
        if (routed.auth) routed.limits = handlers::build_limits(config::HandlerCommon{}, context);
        built->server.router.add_site(std::move(routed));
    }
    if (purpose == Build::serving && config.access_log != "off") {
        built->access_log = std::make_shared<http::AccessLog>(config.access_log, error);
        if (!built->access_log->ok()) return nullptr;
        built->server.access_log = built->access_log;
    }
    return built;
}

void describe(const BuiltServer& built, const std::vector<Address>& listeners) {
    for (const Address& a : listeners) {
        const std::string url =
            a.kind() == Address::Kind::unix_path ? a.to_string() : "http://" + a.to_string() + "/";
        std::printf("weft: listening on %s\n", url.c_str());
    }
    for (const http::Handler* handler : built.handlers)
        std::printf("weft:   %s  %s\n", handler->route().text().c_str(),
                    handler->describe().c_str());
}

} // namespace weft
