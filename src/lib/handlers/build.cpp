#include "handlers/build.hpp"

// Each handler kind: one line here.
#include "handlers/fastcgi/handler.hpp"
#include "handlers/files/handler.hpp"
#include "handlers/pubsub/handler.hpp"
#include "handlers/redirect.hpp"
#include "handlers/response.hpp"
#include "handlers/status/handler.hpp"

#include "http/date.hpp"
#include "http/mime.hpp"
#include "http/path.hpp"
#include "util/ascii.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <variant>

namespace weft::handlers {

std::string_view BuildContext::root(const std::string& own) const {
    return own.empty() ? std::string_view(site.root) : std::string_view(own);
}

std::string_view BuildContext::site_name() const {
    return site.hosts.empty() ? std::string_view{} : std::string_view(site.hosts.front());
}

std::shared_ptr<fastcgi::Upstream> BuildContext::upstream(std::string_view name) const {
    for (std::size_t i = 0; i < config.upstreams.size() && i < upstreams.size(); ++i)
        if (config.upstreams[i].name == name) return upstreams[i];
    return nullptr;
}

std::shared_ptr<fastcgi::Upstream>
BuildContext::pool(const fastcgi::UpstreamOptions& options) const {
    return pools ? pools->get(options) : std::make_shared<fastcgi::Upstream>(options);
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
    options.real_ip.proxies = config.real_ip_from;
    using Header = config::Config::RealIpHeader;
    options.real_ip.header =
        config.real_ip_header == Header::forwarded   ? http::ForwardingHeader::forwarded
        : config.real_ip_header == Header::x_real_ip ? http::ForwardingHeader::x_real_ip
                                                     : http::ForwardingHeader::x_forwarded_for;
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

namespace {

bool read_whole_file(const std::string& path, std::string& out, std::string& error) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        error = std::strerror(errno);
        return false;
    }
    char buffer[16384];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
        out.append(buffer, static_cast<std::size_t>(n));
    if (n < 0) error = std::strerror(errno);
    ::close(fd);
    return n == 0;
}

// The bytes of the error page file at `path`, read at its first use in the
// site; null with `error` when it does not read.
std::shared_ptr<const std::string> page_file(const BuildContext& context, const std::string& path,
                                             std::string& error) {
    for (const auto& [read, bytes] : context.page_files)
        if (read == path) return bytes;
    auto bytes = std::make_shared<std::string>();
    if (!read_whole_file(path, *bytes, error)) return nullptr;
    context.page_files.emplace_back(path, bytes);
    return bytes;
}

std::string lowercase(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = ascii::to_lower(c);
    return out;
}

bool same_name(std::string_view a, std::string_view b) {
    return ascii::equals_ignoring_case(a, b);
}

} // namespace

bool build_response_rules(const config::HandlerCommon* common, const BuildContext& context,
                          std::unique_ptr<const http::ResponseRules>& out, std::string& error) {
    const std::string name =
        common ? common->route.path + ": "
               : "site " +
                     std::string(context.site_name().empty() ? "(default)" : context.site_name()) +
                     ": ";
    const std::vector<config::HeaderEdit> none_edits;
    const std::vector<config::ErrorPage> none_pages;
    const std::vector<config::HeaderEdit>& own_edits = common ? common->headers : none_edits;
    const std::vector<config::ErrorPage>& own_pages = common ? common->error_pages : none_pages;
    auto rules = std::make_unique<http::ResponseRules>();

    // headers: the site's, but for names the handler has entries for; then
    // the handler's.
    // A handler's cache_control or expires overrides the site's Cache-Control
    // as its own headers entry would (the loader refuses both in one handler).
    const bool own_cache_keys = common && (!common->cache_control.empty() || common->expires);
    std::vector<const config::HeaderEdit*> edits;
    for (const config::HeaderEdit& edit : context.site.headers)
        if (std::none_of(
                own_edits.begin(), own_edits.end(),
                [&](const config::HeaderEdit& own) { return same_name(own.name, edit.name); }) &&
            !(own_cache_keys && same_name(edit.name, "Cache-Control")))
            edits.push_back(&edit);
    for (const config::HeaderEdit& edit : own_edits) edits.push_back(&edit);
    bool sets_cache_control = false;
    bool sets_expires = false;
    for (const config::HeaderEdit* edit : edits) {
        using Op = config::HeaderEdit::Op;
        std::string lower = lowercase(edit->name);
        if (edit->op != Op::add &&
            std::find(rules->drops.begin(), rules->drops.end(), lower) == rules->drops.end())
            rules->drops.push_back(lower);
        if (edit->op != Op::remove) {
            rules->lines.append(edit->name).append(": ").append(edit->value).append("\r\n");
            sets_cache_control = sets_cache_control || lower == "cache-control";
            sets_expires = sets_expires || lower == "expires";
        }
    }

    // cache_control and expires; a headers entry that sends a Cache-Control
    // says it all.
    if (common && !sets_cache_control && (!common->cache_control.empty() || common->expires)) {
        std::string value = common->cache_control;
        if (common->expires) {
            rules->expires =
                std::chrono::duration_cast<std::chrono::seconds>(*common->expires).count();
            if (!value.empty()) value += ", ";
            value += "max-age=" + std::to_string(rules->expires);
        }
        rules->cache_control_line = "Cache-Control: " + value + "\r\n";
        // A headers entry's Expires is the only one: max-age stays.
        if (sets_expires) rules->expires = -1;
    }
    const std::size_t expires_line =
        rules->expires >= 0 ? http::ResponseRules::kExpiresLineSize : 0;
    if (rules->lines.size() + rules->cache_control_line.size() + expires_line >
        http::ResponseRules::kMaxLines) {
        error = name + "the headers it adds pass " +
                std::to_string(http::ResponseRules::kMaxLines) + " bytes";
        return false;
    }

    // error_page: the handler's, then the site's for the other statuses.
    const auto add_pages = [&](const std::vector<config::ErrorPage>& pages) {
        for (const config::ErrorPage& page : pages) {
            for (const int status : page.statuses) {
                if (rules->error_page(status)) continue;
                http::ErrorPageTarget target;
                target.status = status;
                if (page.kind == config::ErrorPage::Kind::file) {
                    target.from_file = true;
                    target.content_type = http::mime_type(page.target);
                    std::string why;
                    if (context.open_roots &&
                        !(target.body = page_file(context, page.target, why))) {
                        error = name + "cannot read the error page " + page.target + ": " + why;
                        return false;
                    }
                } else {
                    std::string scratch(page.target.size(), '\0');
                    const std::optional<std::string_view> path =
                        http::normalize_path(page.target, scratch.data());
                    if (!path) {
                        error = name + "the error page " + page.target + " is not a path";
                        return false;
                    }
                    target.route = *path;
                }
                rules->error_pages.push_back(std::move(target));
            }
        }
        return true;
    };
    if (!add_pages(own_pages) || !add_pages(context.site.error_pages)) return false;

    if (!rules->empty()) out = std::move(rules);
    return true;
}

std::unique_ptr<const AccessRules> build_access(const config::HandlerCommon* common,
                                                const BuildContext& context) {
    const AccessRules& rules =
        common && !common->access.empty() ? common->access : context.site.access;
    if (rules.empty()) return nullptr;
    return std::make_unique<const AccessRules>(rules);
}

std::unique_ptr<const http::BasicAuth> build_auth(const config::HandlerCommon* common,
                                                  const BuildContext& context) {
    const config::BasicAuth& site = context.site.auth;
    const config::BasicAuth none;
    const config::BasicAuth& own = common ? common->auth : none;
    if (own.off) return nullptr;
    const std::optional<std::string>& realm = own.realm ? own.realm : site.realm;
    const config::BasicAuth& file = own.users ? own : site;
    if (!realm || !file.users) return nullptr; // the loader refuses a realm without users
    std::shared_ptr<http::UserFile> users;
    for (const std::shared_ptr<http::UserFile>& known : context.user_files)
        if (known->path() == file.user_file) users = known;
    if (!users) {
        users = std::make_shared<http::UserFile>(file.user_file, file.users);
        context.user_files.push_back(users);
    }
    const bool any = own.satisfy_any.value_or(site.satisfy_any.value_or(false));
    return std::make_unique<const http::BasicAuth>(*realm, std::move(users), any);
}

std::shared_ptr<LimitTable> limit_table(const config::Config& config) {
    const auto on = [](const config::LimitSettings& limits) {
        return limits.conn.value_or(0) > 0 || (limits.rate && !limits.rate->off());
    };
    for (const config::Site& site : config.sites) {
        bool any = on(site.limits);
        for (const config::Handler& h : site.handlers)
            any =
                any || std::visit([&](const config::HandlerCommon& c) { return on(c.limits); }, h);
        if (any) return std::make_shared<LimitTable>(config.limit_table);
    }
    return nullptr;
}

std::unique_ptr<const http::Limits> build_limits(const config::HandlerCommon& common,
                                                 const BuildContext& context) {
    const config::LimitSettings& own = common.limits;
    const config::LimitSettings& site = context.site.limits;
    const unsigned conns = own.conn ? *own.conn : site.conn.value_or(0);
    const RateLimit rate = own.rate ? *own.rate : site.rate.value_or(RateLimit{});
    if (!context.limits || (conns == 0 && rate.off())) return nullptr;
    LimitTable& table = *context.limits;
    const bool own_conn = own.conn && conns > 0;
    const bool own_rate = own.rate && !rate.off();
    const bool site_conn = !own.conn && conns > 0;
    const bool site_rate = !own.rate && !rate.off();
    if ((site_conn || site_rate) && !context.site_limit)
        context.site_limit = table.add_limit(site.rate.value_or(RateLimit{}));
    const std::uint16_t own_id =
        own_conn || own_rate ? table.add_limit(own_rate ? rate : RateLimit{}) : 0;
    auto limits = std::make_unique<http::Limits>();
    limits->table = context.limits;
    limits->rate_id = own_rate ? own_id : site_rate ? context.site_limit : 0;
    limits->conn_id = own_conn ? own_id : site_conn ? context.site_limit : 0;
    limits->max_conns = conns;
    limits->status = static_cast<std::uint16_t>(own.status.value_or(site.status.value_or(429)));
    return limits;
}

std::unique_ptr<http::Handler> build_handler(const config::Handler& handler,
                                             const BuildContext& context, std::string& error) {
    // A kind without its create() does not compile.
    std::unique_ptr<http::Handler> built =
        std::visit([&](const auto& h) { return create(h, context, error); }, handler);
    if (!built) return nullptr;
    const config::HandlerCommon& common =
        std::visit([](const auto& h) -> const config::HandlerCommon& { return h; }, handler);
    std::unique_ptr<const http::ResponseRules> rules;
    if (!build_response_rules(&common, context, rules, error)) return nullptr;
    built->set_rules(std::move(rules));
    built->set_access(build_access(&common, context));
    built->set_auth(build_auth(&common, context));
    built->set_limits(build_limits(common, context));
    return built;
}

} // namespace weft::handlers
