// A handler's limits from its keys and its site's (handlers::build_limits):
// each key its own or inherited, the site's one budget for every handler
// that takes it, `off`, the status, and no table when nothing is limited.

#include "handlers/build.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace weft;

namespace {

RateLimit rate(const char* text) {
    std::string error;
    return *RateLimit::parse(text, error);
}

config::ResponseHandler handler(const char* path) {
    config::ResponseHandler h;
    h.route.path = path;
    return h;
}

} // namespace

TEST_CASE("no limit anywhere: no table, and handlers carry none", "[build]") {
    config::Config config;
    config.sites.emplace_back().handlers.emplace_back(handler("/"));
    CHECK_FALSE(handlers::limit_table(config));
}

TEST_CASE("a site's limits are one budget, a handler's own key is its own", "[build]") {
    config::Config config;
    config.limit_table = 100;
    config::Site& site = config.sites.emplace_back();
    site.limits.conn = 8;
    site.limits.rate = rate("10r/s burst 5");
    config::ResponseHandler plain = handler("/a");
    config::ResponseHandler own_rate = handler("/b");
    own_rate.limits.rate = rate("1r/m nodelay");
    own_rate.limits.status = 503;
    config::ResponseHandler off = handler("/c");
    off.limits.conn = 0;
    off.limits.rate = RateLimit{};
    site.handlers = {plain, own_rate, off};
    const std::shared_ptr<LimitTable> table = handlers::limit_table(config);
    REQUIRE(table);
    CHECK(table->capacity() == 128);
    const std::vector<std::shared_ptr<fastcgi::Upstream>> none;
    const handlers::BuildContext context{config, site, none, false, {}, nullptr, {}, table};

    const auto a = handlers::build_limits(plain, context);
    const auto b = handlers::build_limits(own_rate, context);
    const auto a_again = handlers::build_limits(plain, context);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->rate_id == a->conn_id); // the site's id holds both
    CHECK(a_again->rate_id == a->rate_id);
    CHECK(a->max_conns == 8);
    CHECK(a->status == 429);
    CHECK(b->conn_id == a->conn_id); // inherited: the site's budget
    CHECK(b->rate_id != a->rate_id); // its own
    CHECK(b->status == 503);
    CHECK_FALSE(handlers::build_limits(off, context));
}
