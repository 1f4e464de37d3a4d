#pragma once
// What the router hands a request to: one object per configured handler
// (response, redirect, files, fastcgi), built at start-up from the config and
// shared by every loop, so serve() must not change it (per-loop state goes in
// thread_local storage).

#include "http/basic_auth.hpp"
#include "http/limits.hpp"
#include "http/response_rules.hpp"
#include "http/route.hpp"
#include "util/cidr.hpp"

#include <memory>
#include <string>
#include <utility>

namespace weft::http {

class Exchange;

class Handler {
public:
    explicit Handler(Route route) : route_(std::move(route)) {}
    explicit Handler(std::string prefix) : route_(Route::prefix(std::move(prefix))) {}
    virtual ~Handler() = default;
    Handler(const Handler&) = delete;
    Handler& operator=(const Handler&) = delete;

    // Answers the request, in the connection's coroutine: it may wait on I/O.
    // A handler that returns without responding gets a 500 sent for it.
    virtual void serve(Exchange& exchange) const = 0;

    // Which requests of its site it serves.
    const Route& route() const { return route_; }
    // The route's path: for a prefix route the prefix (a normalised path;
    // "/" serves everything).
    const std::string& prefix() const { return route_.path; }

    // What it serves, in one line for people ("files from /srv/www",
    // "redirect 301 to /new"): `weft -t` and start-up print it after the
    // route.
    virtual std::string describe() const = 0;

    // What the configuration adds to its responses (headers, cache_control,
    // expires, error_page), or nullptr for nothing; set once at build.
    const ResponseRules* rules() const { return rules_.get(); }
    void set_rules(std::unique_ptr<const ResponseRules> rules) { rules_ = std::move(rules); }

    // Who may be served (allow_from, deny_from: its own, else its site's),
    // or nullptr for everyone; set once at build. A client it denies gets
    // 403 before serve() runs.
    const AccessRules* access() const { return access_.get(); }
    void set_access(std::unique_ptr<const AccessRules> access) { access_ = std::move(access); }

    // Who must log in (auth_basic: its own, else its site's), or nullptr;
    // set once at build. Checked after access(): a client without valid
    // credentials gets 401 before serve() runs.
    const BasicAuth* auth() const { return auth_.get(); }
    void set_auth(std::unique_ptr<const BasicAuth> auth) { auth_ = std::move(auth); }
    // Its limit_conn and limit_rate (each its own, else its site's), or
    // nullptr for none; set once at build. Checked before access() and auth().
    const Limits* limits() const { return limits_.get(); }
    void set_limits(std::unique_ptr<const Limits> limits) { limits_ = std::move(limits); }

private:
    Route route_;
    std::unique_ptr<const ResponseRules> rules_;
    std::unique_ptr<const AccessRules> access_;
    std::unique_ptr<const BasicAuth> auth_;
    std::unique_ptr<const Limits> limits_;
};

} // namespace weft::http
