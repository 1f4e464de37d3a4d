#include "http/router.hpp"

#include "http/request.hpp"
#include "util/ascii.hpp"
#include "util/path_pattern.hpp"
#include "util/words.hpp"

#include <algorithm>
#include <cstring>

namespace weft::http {

void Router::add_site(Site site) {
    using Kind = Route::Kind;
    SortedSite sorted;
    for (std::unique_ptr<Handler>& handler : site.handlers)
        if (handler->route().kind == Kind::exact)
            sorted.exact_and_patterns.push_back(std::move(handler));
    sorted.exact_end = sorted.exact_and_patterns.size();
    for (std::unique_ptr<Handler>& handler : site.handlers)
        if (handler && handler->route().kind == Kind::pattern)
            sorted.exact_and_patterns.push_back(std::move(handler));
    std::erase(site.handlers, nullptr);
    std::stable_sort(site.handlers.begin(), site.handlers.end(),
                     [](const std::unique_ptr<Handler>& a, const std::unique_ptr<Handler>& b) {
                         return a->prefix().size() > b->prefix().size();
                     });
    sorted.site = std::move(site);
    sorted.prefixes_only = sorted.exact_and_patterns.empty();
    sites_.push_back(std::move(sorted));
}

// Inlined into route(), as it was before site_rules() called it too: 3
// instructions a request (callgrind).
[[gnu::always_inline]] inline const Router::SortedSite*
Router::site_for(std::string_view host) const {
    if (sites_.size() == 1) return &sites_.front();
    return site_by_host(host);
}

// Out of line: inlined, its loops made route() save six registers for every
// request, one site or many (callgrind, hello).
const Router::SortedSite* Router::site_by_host(std::string_view host) const {
    // The name without the port; an IPv6 literal keeps its brackets.
    const std::size_t colon = host.rfind(':');
    if (colon != std::string_view::npos && host.find(']', colon) == std::string_view::npos)
        host = host.substr(0, colon);
    const SortedSite* fallback = nullptr;
    for (const SortedSite& sorted : sites_) {
        if (sorted.site.hosts.empty()) {
            if (!fallback) fallback = &sorted;
            continue;
        }
        for (const std::string& name : sorted.site.hosts)
            if (ascii::equals_ignoring_case(name, host)) return &sorted;
    }
    if (fallback) return fallback;
    return sites_.empty() ? nullptr : &sites_.front();
}

namespace {

// The n bytes at x and at y are the same. A route's path is short: up to 16
// bytes are compared a word or two at a time in place (memcmp's call cost a
// request 18 instructions: callgrind, hello).
[[gnu::always_inline]] inline bool same_bytes(const char* x, const char* y, std::size_t n) {
    using words::load32;
    using words::load64;
    if (n > 16) return std::memcmp(x, y, n) == 0;
    // Two loads that overlap when n is not twice their size.
    if (n >= 8) return load64(x) == load64(y) && load64(x + n - 8) == load64(y + n - 8);
    if (n >= 4) return load32(x) == load32(y) && load32(x + n - 4) == load32(y + n - 4);
    for (std::size_t i = 0; i < n; ++i)
        if (x[i] != y[i]) return false;
    return true;
}

bool same_path(std::string_view a, std::string_view b) {
    return a.size() == b.size() && same_bytes(a.data(), b.data(), a.size());
}

// prefix_matches() (util/path_pattern.hpp), its compare without the call.
bool prefix_serves(std::string_view prefix, std::string_view path) {
    if (path.size() < prefix.size() || !same_bytes(path.data(), prefix.data(), prefix.size()))
        return false;
    return prefix.size() == path.size() || prefix.ends_with('/') || path[prefix.size()] == '/';
}

} // namespace

const Handler* Router::exact_or_pattern(const SortedSite& sorted, std::string_view path) {
    const std::vector<std::unique_ptr<Handler>>& handlers = sorted.exact_and_patterns;
    for (std::size_t i = 0; i < sorted.exact_end; ++i)
        if (same_path(handlers[i]->route().path, path)) return handlers[i].get();
    for (std::size_t i = sorted.exact_end; i < handlers.size(); ++i)
        if (handlers[i]->route().pattern->matches(path)) return handlers[i].get();
    return nullptr;
}

const ResponseRules* Router::site_rules(std::string_view host) const {
    const SortedSite* sorted = site_for(host);
    return sorted ? sorted->site.rules.get() : nullptr;
}

const AccessRules* Router::site_access(std::string_view host) const {
    const SortedSite* sorted = site_for(host);
    return sorted ? sorted->site.access.get() : nullptr;
}

const BasicAuth* Router::site_auth(std::string_view host) const {
    const SortedSite* sorted = site_for(host);
    return sorted ? sorted->site.auth.get() : nullptr;
}

const Limits* Router::site_limits(std::string_view host) const {
    const SortedSite* sorted = site_for(host);
    return sorted ? sorted->site.limits.get() : nullptr;
}

const Handler* Router::route(std::string_view host, std::string_view path) const {
    const SortedSite* sorted = site_for(host);
    if (!sorted) return nullptr;
    if (!sorted->prefixes_only)
        if (const Handler* handler = exact_or_pattern(*sorted, path)) return handler;
    for (const std::unique_ptr<Handler>& handler : sorted->site.handlers)
        if (prefix_serves(handler->prefix(), path)) return handler.get();
    return nullptr;
}

} // namespace weft::http
