// What a review of issue 15's routes found in the configuration: a route or
// a deny/scripts pattern that no normalised request path can match is an
// error, not a rule that silently does nothing; an escaped wildcard in a
// prefix route is the character itself.

#include "config/parser.hpp"

#include <catch2/catch.hpp>

using namespace weft::config;

namespace {

const Environment kNoEnv = [](std::string_view) -> std::optional<std::string> {
    return std::nullopt;
};

std::string site(std::string_view body) {
    return "site {\n    root = /srv\n" + std::string(body) + "}\n";
}

std::string failure(std::string_view text) {
    ConfigError error;
    REQUIRE_FALSE(load_text(text, "test.conf", kNoEnv, error));
    return error.text();
}

} // namespace

TEST_CASE("a route or pattern with a '//', '.' or '..' segment never matches: an error",
          "[config]") {
    const std::string never = "never matches: a request's path is normalised";
    for (const char* route :
         {"files exact /a/../b {\n    }\n", "files exact /a//b {\n    }\n",
          "files /a/./b {\n    }\n", "files /w//*.css {\n    }\n", "files exact /a/. {\n    }\n"}) {
        INFO(route);
        const std::string error = failure(site(std::string("    ") + route));
        CHECK(error.starts_with("test.conf:3:11: '/"));
        CHECK(error.find(never) != std::string::npos);
    }
    const std::string deny =
        failure(site("    files / {\n        deny = *.less /static//keys\n    }\n"));
    CHECK(deny.starts_with("test.conf:4:16: '/static//keys' never matches"));
    const std::string scripts = failure(site("    fastcgi /w {\n        pass = 127.0.0.1:9000\n    "
                                             "    scripts = /w/../index.php\n    }\n"));
    CHECK(scripts.starts_with("test.conf:5:19: '/w/../index.php' never matches"));
}

TEST_CASE("a trailing '/' on a prefix or pattern still routes", "[config]") {
    ConfigError error;
    CHECK(load_text(site("    files /a/ {\n    }\n    files /w/**/ {\n    }\n    files / {\n"
                         "        deny = /private/ /x/**/*.md\n    }\n"),
                    "test.conf", kNoEnv, error));
    INFO(error.text());
}

TEST_CASE("an escaped wildcard in a prefix route is the character itself", "[config]") {
    ConfigError error;
    const auto config = load_text(site("    files /a\\*b {\n    }\n"), "test.conf", kNoEnv, error);
    INFO(error.text());
    REQUIRE(config);
    const auto& files = std::get<FilesHandler>(config->sites.at(0).handlers.at(0));
    CHECK(files.route.kind == Route::Kind::prefix);
    CHECK(files.route.path == "/a*b");
}
