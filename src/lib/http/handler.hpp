#pragma once
// What the router hands a request to: one object per configured handler
// (response, redirect, files, fastcgi), built at start-up from the config and
// shared by every loop, so serve() must not change it (per-loop state goes in
// thread_local storage).

#include "http/route.hpp"

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

private:
    Route route_;
};

} // namespace weft::http
