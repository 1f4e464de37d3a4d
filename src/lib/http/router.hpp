#pragma once
// Chooses the handler for a request: the site by Host, then, by the
// normalised path, the handler with that exact route, else the first pattern
// route (in the order added) that matches, else the one with the longest
// prefix.
//
// A prefix matches on segment boundaries: /static serves /static and
// /static/a.css but not /staticky; a prefix ending in '/' matches whatever
// starts with it. Host names compare case-insensitively, without the port.
// A Host no site names goes to the first site that names none (the default),
// else to the first site.

#include "http/handler.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weft::http {

class Router {
public:
    struct Site {
        std::vector<std::string> hosts; // any case; empty: the default site
        std::vector<std::unique_ptr<Handler>> handlers;
        // The site's own response rules, for requests no handler takes.
        std::unique_ptr<const ResponseRules> rules;
        // The site's allow_from/deny_from, for paths no handler takes
        // (nullptr: everyone); handlers carry their own.
        std::unique_ptr<const AccessRules> access;
        // Its auth_basic, for paths no handler takes (nullptr: none).
        std::unique_ptr<const BasicAuth> auth;
        // Its limits, for paths no handler takes where `auth` asks for
        // credentials (nullptr: none): a rate bounds guessing there too.
        std::unique_ptr<const Limits> limits;
    };

    // Sites are tried in the order given; handlers are sorted here.
    void add_site(Site site);

    // The handler for (host, path), or nullptr when no route matches.
    const Handler* route(std::string_view host, std::string_view path) const;

    // The rules of the site for `host` (nullptr: none).
    const ResponseRules* site_rules(std::string_view host) const;
    // The access rules of the site for `host` (nullptr: none).
    const AccessRules* site_access(std::string_view host) const;
    // The Basic authentication of the site for `host` (nullptr: none).
    const BasicAuth* site_auth(std::string_view host) const;
    // The limits of the site for `host` (nullptr: none).
    const Limits* site_limits(std::string_view host) const;

private:
    // A site's handlers sorted: its prefixes, longest first, in site.handlers
    // (so a site of prefixes only is routed as before routes had kinds);
    // its exact routes then its pattern routes, in the order added, apart.
    struct SortedSite {
        Site site;
        std::vector<std::unique_ptr<Handler>> exact_and_patterns;
        std::size_t exact_end = 0;
        bool prefixes_only = true; // exact_and_patterns is empty: one load to know
    };

    // Out of line, as site_by_host(): a site of prefixes only never calls it.
    [[gnu::noinline]] static const Handler* exact_or_pattern(const SortedSite& sorted,
                                                             std::string_view path);

    const SortedSite* site_for(std::string_view host) const;
    [[gnu::noinline]] const SortedSite* site_by_host(std::string_view host) const;

    std::vector<SortedSite> sites_;
};

} // namespace weft::http
