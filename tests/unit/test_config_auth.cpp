// auth_basic and auth_basic_user_file: the realm, off, the htpasswd file
// read at load (a missing file or a bad line is an error at the key's
// value), and what a handler takes from its site.

#include "config/parser.hpp"
#include "config_helpers.hpp"

#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <string_view>
#include <variant>

using namespace weft;
using namespace weft::config;

namespace {

using test::failure;
using test::load;

const HandlerCommon& common(const Handler& handler) {
    return std::visit([](const HandlerCommon& h) -> const HandlerCommon& { return h; }, handler);
}

// An htpasswd file in a scratch directory, removed after the test.
struct UserFile {
    std::string dir;
    std::string path;
    explicit UserFile(std::string_view text) {
        char templ[] = "/tmp/weft-auth-XXXXXX";
        dir = mkdtemp(templ);
        path = dir + "/htpasswd";
        std::ofstream(path) << text;
    }
    ~UserFile() {
        unlink(path.c_str());
        rmdir(dir.c_str());
    }
};

constexpr std::string_view kUsers = "alice:$apr1$0AuxFfEz$9GWjoXYjhBQ2aMA7rNGJ20\n"
                                    "bob:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\n";

} // namespace

TEST_CASE("auth_basic and its user file load on a site, and handlers take the site's", "[config]") {
    const UserFile users(kUsers);
    const Config c = load("site {\n"
                          "    auth_basic = \"Staff \\\"only\\\"\"\n"
                          "    auth_basic_user_file = " +
                          users.path +
                          "\n"
                          "    response / {\n        body = hi\n    }\n"
                          "    response /public {\n        auth_basic = off\n    }\n"
                          "    response /other {\n        auth_basic = Other\n    }\n"
                          "}\n");
    const BasicAuth& site = c.sites[0].auth;
    REQUIRE(site.realm);
    CHECK(*site.realm == "Staff \"only\"");
    CHECK(site.user_file == users.path);
    REQUIRE(site.users);
    CHECK(site.users->find("alice"));
    CHECK(site.users->find("bob"));
    const BasicAuth& root = common(c.sites[0].handlers[0]).auth;
    CHECK_FALSE(root.realm);
    CHECK_FALSE(root.off);
    CHECK(common(c.sites[0].handlers[1]).auth.off);
    CHECK(common(c.sites[0].handlers[2]).auth.realm == std::string("Other"));
}

TEST_CASE("auth_basic_user_file is relative to the config file that names it", "[config]") {
    const UserFile users(kUsers);
    const std::string conf = users.dir + "/weft.conf";
    std::ofstream(conf) << "site {\n    auth_basic = x\n    auth_basic_user_file = htpasswd\n}\n";
    ConfigError error;
    const std::optional<Config> c = load_file(conf, test::kNoEnv, error);
    INFO(error.text());
    REQUIRE(c);
    CHECK(c->sites[0].auth.user_file == users.dir + "/htpasswd");
    unlink(conf.c_str());
}

TEST_CASE("a missing or bad htpasswd file is an error at the key's value", "[config]") {
    CHECK(
        failure(
            "site {\n    auth_basic = x\n    auth_basic_user_file = /nonexistent/htpasswd\n}\n") ==
        "test.conf:3:28: cannot read /nonexistent/htpasswd: No such file or directory");
    const UserFile plain("alice:$apr1$0AuxFfEz$9GWjoXYjhBQ2aMA7rNGJ20\nbob:secret\n");
    CHECK(
        failure("site {\n    auth_basic = x\n    auth_basic_user_file = " + plain.path + "\n}\n") ==
        "test.conf:3:28: " + plain.path +
            ":2: user 'bob': not a hash weft checks (bcrypt $2y$, SHA-crypt $5$ $6$, $apr1$, "
            "{SHA}): plain-text passwords (htpasswd -p) and DES crypt (-d) are refused, as is "
            "a hash cut short");
}

TEST_CASE("a realm needs a user file and a user file a realm, here or in the site", "[config]") {
    const UserFile users(kUsers);
    CHECK(failure("site {\n    auth_basic = x\n}\n") ==
          "test.conf:2:5: auth_basic needs an auth_basic_user_file in the site");
    CHECK(failure("site {\n    response / {\n        auth_basic = x\n    }\n}\n") ==
          "test.conf:3:9: auth_basic needs an auth_basic_user_file here or in the site");
    CHECK(failure("site {\n    response / {\n        auth_basic_user_file = " + users.path +
                  "\n    }\n}\n") ==
          "test.conf:3:9: auth_basic_user_file needs an auth_basic (the realm) here or in the "
          "site");
    // The site's keys may come after the handler's section.
    const Config c = load("site {\n    response / {\n        auth_basic = x\n    }\n"
                          "    auth_basic_user_file = " +
                          users.path + "\n}\n");
    CHECK(common(c.sites[0].handlers[0]).auth.realm == std::string("x"));
    CHECK(failure("site {\n    auth_basic = \"a\\nb\"\n}\n") ==
          "test.conf:2:18: a header value holds no line break or NUL");
    CHECK(failure("site {\n    auth_basic = x\n    auth_basic = y\n}\n").find("twice") !=
          std::string::npos);
}

TEST_CASE("satisfy is all or any, on a site and its handlers", "[config]") {
    const Config c = load("site {\n    satisfy = any\n    response / {\n        satisfy = all\n"
                          "    }\n    response /b {\n    }\n}\n");
    CHECK(c.sites[0].auth.satisfy_any == true);
    CHECK(common(c.sites[0].handlers[0]).auth.satisfy_any == false);
    CHECK_FALSE(common(c.sites[0].handlers[1]).auth.satisfy_any);
    CHECK(failure("site {\n    satisfy = some\n}\n") ==
          "test.conf:2:15: expected all or any, not 'some'");
}
