// allow_from and deny_from: on a site and on every handler kind, one list in
// the order written across both keys, and a bad address as an error at its
// file, line and column.

#include "config/parser.hpp"
#include "config_helpers.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <variant>

using namespace weft;
using namespace weft::config;

namespace {

using test::failure;
using test::load;

std::string written(const AccessRules& rules) {
    std::string out;
    for (const AccessRule& rule : rules.rules()) out += rule.to_string() + "; ";
    return out;
}

const HandlerCommon& common(const Handler& handler) {
    return std::visit([](const HandlerCommon& h) -> const HandlerCommon& { return h; }, handler);
}

IpAddress address(std::string_view text) {
    const std::optional<IpAddress> parsed = IpAddress::parse(text);
    REQUIRE(parsed);
    return *parsed;
}

} // namespace

TEST_CASE("allow_from and deny_from keep the written order across both keys", "[config]") {
    const Config c = load(R"(site {
    deny_from = 192.168.1.1
    allow_from = 192.168.1.0/24 10.1.0.0/16
    allow_from = 2001:db8::/32
    deny_from = all
    response / {
        body = hi
    }
}
)");
    REQUIRE(c.sites.size() == 1);
    const AccessRules& rules = c.sites[0].access;
    CHECK(written(rules) == "deny 192.168.1.1; allow 192.168.1.0/24; allow 10.1.0.0/16; "
                            "allow 2001:db8::/32; deny all; ");
    CHECK_FALSE(rules.allows(address("192.168.1.1")));
    CHECK(rules.allows(address("192.168.1.9")));
    CHECK_FALSE(rules.allows(address("127.0.0.1")));
    CHECK(common(c.sites[0].handlers[0]).access.empty());
}

TEST_CASE("every handler kind takes allow_from and deny_from", "[config]") {
    const Config c = load(R"(upstream php {
    server = 127.0.0.1:9000
}
site {
    root = /srv
    response /r {
        body = hi
        allow_from = 127.0.0.1
        deny_from = all
    }
    redirect /old {
        to = /new
        deny_from = 10.0.0.0/8
    }
    files /static {
        allow_from = ::1 unix:
    }
    fastcgi /app {
        upstream = php
        deny = /app/secret
        deny_from = 127.0.0.2
    }
}
)");
    const auto& handlers = c.sites[0].handlers;
    REQUIRE(handlers.size() == 4);
    CHECK(written(common(handlers[0]).access) == "allow 127.0.0.1; deny all; ");
    CHECK(written(common(handlers[1]).access) == "deny 10.0.0.0/8; ");
    CHECK(written(common(handlers[2]).access) == "allow ::1; allow unix:; ");
    CHECK(written(common(handlers[3]).access) == "deny 127.0.0.2; ");
    // The path patterns of `deny` are another key.
    CHECK(std::get<FastcgiHandler>(handlers[3]).deny.size() == 1);
    CHECK(c.sites[0].access.empty());
}

TEST_CASE("a bad address is an error at its line and column", "[config]") {
    CHECK(failure("site {\n    allow_from = 10.0.0.0/33\n}\n") ==
          "test.conf:2:18: expected an address, a block (10.0.0.0/8), 'all' or 'unix:': "
          "'10.0.0.0/33': the prefix length is a number from 0 to 32");
    CHECK(failure("site {\n  files / {\n    deny_from = 10.1.2.3/8\n  }\n}\n") ==
          "test.conf:3:17: expected an address, a block (10.0.0.0/8), 'all' or 'unix:': "
          "'10.1.2.3/8' has bits set past its prefix (the block is 10.0.0.0/8)");
    CHECK(failure("site {\n    deny_from = localhost\n}\n")
              .find("test.conf:2:17: expected an address") == 0);
    CHECK(failure("site {\n    deny_from =\n}\n").find("test.conf:2:") == 0);
    CHECK(failure("site {\n    allow_from 10.0.0.1\n}\n").find("expected '='") !=
          std::string::npos);
    // At the top level it is no key at all.
    CHECK(failure("allow_from = 127.0.0.1\n").find("test.conf:1:1:") == 0);
}
