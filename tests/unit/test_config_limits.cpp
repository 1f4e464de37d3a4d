// limit_conn, limit_rate, limit_status on a site and on a handler, and
// limit_table at the top: values, `off`, defaults, and errors at their
// file, line and column.

#include "config/parser.hpp"
#include "config_helpers.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <variant>

using namespace weft;
using namespace weft::config;

namespace {

using test::failure;
using test::load;

const HandlerCommon& common(const Handler& handler) {
    return std::visit([](const HandlerCommon& h) -> const HandlerCommon& { return h; }, handler);
}

} // namespace

TEST_CASE("limits are read on a site and on a handler, each key on its own", "[config]") {
    const Config c = load(R"(limit_table = 4k
site {
    limit_conn = 64
    limit_rate = 100r/s burst 50
    files /static {
        root = /srv
        limit_rate = 10r/m nodelay
        limit_status = 503
    }
    response /off {
        body = hi
        limit_conn = off
        limit_rate = off
    }
    response / {
        body = hi
    }
}
)");
    CHECK(c.limit_table == 4096);
    const LimitSettings& site = c.sites[0].limits;
    CHECK(site.conn == 64u);
    REQUIRE(site.rate);
    CHECK(site.rate->to_string() == "100r/s burst 50");
    CHECK_FALSE(site.status);
    const LimitSettings& files = common(c.sites[0].handlers[0]).limits;
    CHECK_FALSE(files.conn);
    REQUIRE(files.rate);
    CHECK(files.rate->to_string() == "10r/m nodelay");
    CHECK(files.status == 503);
    const LimitSettings& off = common(c.sites[0].handlers[1]).limits;
    CHECK(off.conn == 0u);
    REQUIRE(off.rate);
    CHECK(off.rate->off());
    const LimitSettings& plain = common(c.sites[0].handlers[2]).limits;
    CHECK_FALSE(plain.conn);
    CHECK_FALSE(plain.rate);
}

TEST_CASE("without limit keys nothing is limited and the table has its default size", "[config]") {
    const Config c = load("site {\n    response / {\n        body = hi\n    }\n}\n");
    CHECK(c.limit_table == 65536);
    CHECK_FALSE(c.sites[0].limits.conn);
    CHECK_FALSE(c.sites[0].limits.rate);
}

TEST_CASE("bad limit values are errors at their value", "[config]") {
    CHECK(failure("site {\n    limit_conn = 0\n}\n") ==
          "test.conf:2:18: expected a number from 1 to 65535, not '0'");
    CHECK(failure("site {\n    limit_rate = 100r/h\n}\n") ==
          "test.conf:2:18: expected a rate such as 100r/s or 30r/m, or off, not '100r/h'");
    CHECK(failure("site {\n    response / {\n        limit_rate = 1r/s burst\n    }\n}\n")
              .starts_with("test.conf:3:22: expected a burst"));
    CHECK(failure("site {\n    limit_status = 500\n}\n") ==
          "test.conf:2:20: expected 429 or 503, not '500'");
    CHECK(failure("limit_table = 0\n") ==
          "test.conf:1:15: expected from 1 to 16M entries, not '0'");
    CHECK(failure("limit_table = 32M\n") ==
          "test.conf:1:15: expected from 1 to 16M entries, not '32M'");
    CHECK(failure("site {\n    limit_conn = 1\n    limit_conn = 2\n}\n").find("limit_conn") !=
          std::string::npos);
}
