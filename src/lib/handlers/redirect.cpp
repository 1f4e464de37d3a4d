#include "handlers/redirect.hpp"

#include "http/exchange.hpp"

#include <cstring>

namespace weft::handlers {

RedirectHandler::RedirectHandler(const config::RedirectHandler& config)
    : Handler(config.prefix), to_(config.to), status_(config.status) {}

void RedirectHandler::serve(http::Exchange& exchange) const {
    const http::Request& request = exchange.request();
    // The raw path keeps its percent-encoding, so the Location is still a
    // valid URI; only the part after the prefix is carried over.
    std::string_view rest = request.path;
    if (rest.starts_with(prefix())) {
        rest.remove_prefix(prefix().size());
    } else {
        rest = {}; // an encoded form of the prefix: the decoded path must not go in a header
    }
    if (!to_.empty() && to_.back() == '/' && rest.starts_with('/')) rest.remove_prefix(1);
    char location[8192];
    const std::size_t need = to_.size() + rest.size() + 1 + request.query.size();
    if (need > sizeof location) {
        exchange.send_error(414);
        return;
    }
    char* p = location;
    std::memcpy(p, to_.data(), to_.size());
    p += to_.size();
    std::memcpy(p, rest.data(), rest.size());
    p += rest.size();
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

} // namespace weft::handlers
