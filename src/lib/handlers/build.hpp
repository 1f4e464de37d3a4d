#pragma once
// Handlers from their configuration: the one place where config structs
// become runtime values (durations to milliseconds, upstream options, each
// kind's settings through its create()). Nothing after start-up parses or
// converts.
//
// Each handler kind has, in its folder, a
//   std::unique_ptr<http::Handler> create(const config::Kind&, const BuildContext&,
//                                         std::string& error);
// and build_handler() calls the one for the config's kind (build.cpp
// includes each kind's header: docs/architecture.md, "How to add a handler
// kind").

#include "config/config.hpp"
#include "fastcgi/upstream.hpp"
#include "fastcgi/upstream_pools.hpp"
#include "http/handler.hpp"
#include "http/server.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::handlers {

// What a handler is built with besides its own section.
struct BuildContext {
    const config::Config& config;
    const config::Site& site;
    // The pools of config.upstreams, in the same order.
    std::span<const std::shared_ptr<fastcgi::Upstream>> upstreams;
    // false for `weft -t`: the configuration is checked, not the disk (no
    // root is opened), as roots are often those of the machine it is meant
    // for.
    bool open_roots = true;
    // The error pages' files read so far, by path: a site's page is read
    // once, not once for each of its handlers and statuses.
    mutable std::vector<std::pair<std::string, std::shared_ptr<const std::string>>> page_files{};
    // Where a handler's own pool (`pass`) comes from: kept across reloads.
    // None: a new pool each time.
    fastcgi::UpstreamPools* pools = nullptr;
    // The htpasswd files of the site's auth_basic, by path: one file
    // watched once, however many handlers use it.
    mutable std::vector<std::shared_ptr<http::UserFile>> user_files{};
    // The table every limit shares (limit_table()); none: nothing is limited.
    std::shared_ptr<LimitTable> limits = nullptr;
    // The id of the site's own limits in it, once a handler took them.
    mutable std::uint16_t site_limit = 0;

    // A handler's root: its own, else its site's.
    std::string_view root(const std::string& own) const;
    // The site's name (its first host), or "" for a site without one.
    std::string_view site_name() const;
    // The pool of the upstream named `name`, or nullptr.
    std::shared_ptr<fastcgi::Upstream> upstream(std::string_view name) const;
    // A pool for `options` (pools->get, or a new one).
    std::shared_ptr<fastcgi::Upstream> pool(const fastcgi::UpstreamOptions& options) const;
};

// A duration as the loop's timers take it: milliseconds, at least 1.
std::uint32_t to_ms(std::chrono::milliseconds d);

// The options of an `upstream` section.
fastcgi::UpstreamOptions upstream_options(const config::Upstream& upstream);

// The server-wide limits of the top level.
http::ServerOptions server_options(const config::Config& config);

// A handler's route as the router takes it; nullopt with a reason for a
// pattern that does not compile (the loader checked it; a configuration made
// in code may not have been).
std::optional<http::Route> route(const config::Route& route, std::string& error);

// The response rules (headers, cache_control, expires, error_page) of a
// handler's `common` keys under its site's, or of the site alone (`common`
// null: for requests no handler takes): a handler's entry for a header name
// or a status overrides the site's. `out` stays null when there are none.
// false with a one-line reason when they cannot be built (an error page's
// file that does not read: only when serving, as roots).
bool build_response_rules(const config::HandlerCommon* common, const BuildContext& context,
                          std::unique_ptr<const http::ResponseRules>& out, std::string& error);

// The access rules of a handler's `common` keys if it has any, else its
// site's (as nginx's: a location with its own allow/deny inherits none of
// the server's), or of the site alone (`common` null); null when none.
std::unique_ptr<const AccessRules> build_access(const config::HandlerCommon* common,
                                                const BuildContext& context);

// The Basic authentication of a handler's `common` keys, each of realm and
// user file its own or else its site's, or of the site alone (`common`
// null); null when there is none or the handler says `auth_basic = off`.
std::unique_ptr<const http::BasicAuth> build_auth(const config::HandlerCommon* common,
                                                  const BuildContext& context);

// The table behind every limit_conn and limit_rate of `config` (limit_table
// entries), or nullptr when it sets none.
std::shared_ptr<LimitTable> limit_table(const config::Config& config);

// The limits of a handler's `common` keys, each its own if set, else its
// site's (a site's are one budget for all its handlers that take them);
// null when none is on.
std::unique_ptr<const http::Limits> build_limits(const config::HandlerCommon& common,
                                                 const BuildContext& context);

// The handler for `handler`, with its response rules; nullptr with a
// one-line reason when it cannot be built (a root that does not open).
std::unique_ptr<http::Handler> build_handler(const config::Handler& handler,
                                             const BuildContext& context, std::string& error);

} // namespace weft::handlers
