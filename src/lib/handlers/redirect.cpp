#include "handlers/redirect.hpp"

#include "http/exchange.hpp"
#include "http/path.hpp"

#include <algorithm>
#include <cstring>

namespace weft::handlers {

void redirect_to_directory(http::Exchange& exchange, std::string_view path) {
    const std::string_view query = exchange.request().query;
    std::string location;
    location.reserve(3 * path.size() + query.size() + 2);
    http::append_percent_encoded(location, path, true);
    location += '/';
    if (!query.empty()) {
        location += '?';
        location += query;
    }
    exchange.status(301);
    exchange.header("Location", location);
    exchange.header("Content-Type", "text/plain; charset=utf-8");
    exchange.send("301 Moved Permanently\n");
}

RedirectHandler::RedirectHandler(const config::RedirectHandler& config, http::Route route)
    : Handler(std::move(route)), to_(config.to), status_(config.status) {}

void RedirectHandler::serve(http::Exchange& exchange) const {
    const http::Request& request = exchange.request();
    // The raw path keeps its percent-encoding, so the Location is still a
    // valid URI; only the part after a prefix route's prefix is carried over
    // (an exact or a pattern route has none).
    std::string_view rest = request.path;
    const std::string_view stem =
        std::string_view(prefix()).substr(0, prefix().size() - (prefix().ends_with('/') ? 1 : 0));
    if (route().kind == http::Route::Kind::prefix && rest != prefix() && rest.starts_with(stem) &&
        rest.substr(stem.size()).starts_with('/')) {
        // The rest keeps its leading slash, so it can never extend `to`'s
        // host (https://a.example + @evil.example).
        rest.remove_prefix(stem.size());
    } else {
        // The prefix itself, or no raw segment boundary after it (an
        // encoded slash): the rest is not carried over.
        rest = {};
    }
    if (!to_.empty() && to_.back() == '/' && rest.starts_with('/')) rest.remove_prefix(1);
    char location[8192];
    // A backslash may grow to %5C.
    const std::size_t need = to_.size() + 3 * rest.size() + 1 + request.query.size();
    if (need > sizeof location) {
        exchange.send_error(414);
        return;
    }
    char* p = location;
    std::memcpy(p, to_.data(), to_.size());
    p += to_.size();
    // Repeated slashes are one and a backslash is encoded, so the rest can
    // never make //evil.example, nor /\evil.example (which browsers read
    // the same way).
    for (const char c : rest) {
        if (c == '/' && p > location && p[-1] == '/') continue;
        if (c == '\\') {
            p = std::copy_n("%5C", 3, p);
            continue;
        }
        *p++ = c;
    }
    if (!request.query.empty()) {
        *p++ = '?';
        std::memcpy(p, request.query.data(), request.query.size());
        p += request.query.size();
    }
    exchange.status(status_);
    exchange.header("Location", {location, static_cast<std::size_t>(p - location)});
    exchange.header("Content-Type", "text/plain; charset=utf-8");
    exchange.send("Redirecting\n");
}

std::string RedirectHandler::describe() const {
    return "redirect " + std::to_string(status_) + " to " + to_;
}

std::unique_ptr<http::Handler> create(const config::RedirectHandler& config, const BuildContext&,
                                      std::string& error) {
    std::optional<http::Route> route = handlers::route(config.route, error);
    if (!route) return nullptr;
    return std::make_unique<RedirectHandler>(config, std::move(*route));
}

} // namespace weft::handlers
