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
    const std::string_view stem =
        std::string_view(prefix()).substr(0, prefix().size() - (prefix().ends_with('/') ? 1 : 0));
    if (rest.starts_with(stem) && rest.substr(stem.size()).starts_with('/')) {
        // The rest keeps its leading slash, so it can never extend `to`'s
        // host (https://a.example + @evil.example); repeated slashes are
        // one, so it can never become //evil.example either.
        rest.remove_prefix(stem.size());
        while (rest.size() > 1 && rest[1] == '/') rest.remove_prefix(1);
    } else {
        // No raw segment boundary after the prefix (an encoded slash, or the
        // prefix itself): the rest is not carried over.
        rest = {};
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
    if (!rest.empty()) std::memcpy(p, rest.data(), rest.size()); // an empty rest has no data()
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
