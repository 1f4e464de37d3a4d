// The configuration of issue 15: routes (prefix, exact, pattern), the keys
// every handler takes (cache_control, expires, headers, error_page), alias,
// deny and scripts patterns; each error with its line and column. A route or
// pattern no normalised request path can match is an error, not a rule that
// silently does nothing; an escaped wildcard in a prefix route is the
// character itself.

#include "config/parser.hpp"
#include "config_helpers.hpp"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using namespace weft::config;

namespace {

using test::failure;
using test::kNoEnv;
using test::load;

// A site with `body` inside, as text.
std::string site(std::string_view body) {
    return "site {\n    root = /srv\n" + std::string(body) + "}\n";
}

template <class H>
const H& handler(const Config& c, std::size_t i) {
    REQUIRE(c.sites.size() == 1);
    REQUIRE(c.sites[0].handlers.size() > i);
    REQUIRE(std::holds_alternative<H>(c.sites[0].handlers[i]));
    return std::get<H>(c.sites[0].handlers[i]);
}

} // namespace

TEST_CASE("routes: a prefix, an exact path, a glob and a name pattern", "[config]") {
    const Config c = load(site(R"(    files /static {
    }
    redirect exact / {
        to = /wiki/Main_Page
    }
    fastcgi /w/{index,load,api}.php {
        pass = 127.0.0.1:9000
    }
    files *.css {
    }
    response exact   /robots.txt   {
    }
)"));
    CHECK(handler<FilesHandler>(c, 0).route.kind == Route::Kind::prefix);
    CHECK(handler<FilesHandler>(c, 0).route.path == "/static");
    CHECK(handler<RedirectHandler>(c, 1).route.kind == Route::Kind::exact);
    CHECK(handler<RedirectHandler>(c, 1).route.path == "/");
    CHECK(handler<FastcgiHandler>(c, 2).route.kind == Route::Kind::pattern);
    CHECK(handler<FastcgiHandler>(c, 2).route.path == "/w/{index,load,api}.php");
    CHECK(handler<FilesHandler>(c, 3).route.kind == Route::Kind::pattern);
    CHECK(handler<FilesHandler>(c, 3).route.path == "*.css");
    CHECK(handler<ResponseHandler>(c, 4).route.kind == Route::Kind::exact);
    CHECK(handler<ResponseHandler>(c, 4).route.path == "/robots.txt");
}

TEST_CASE("a bad route is an error at its column", "[config]") {
    CHECK(failure(site("    files exact {\n    }\n")) ==
          "test.conf:3:11: expected one path starting with '/' after 'exact'");
    CHECK(failure(site("    files exact /a /b {\n    }\n")) ==
          "test.conf:3:11: expected one path starting with '/' after 'exact'");
    CHECK(failure(site("    files /w/{a,b.php {\n    }\n"))
              .starts_with("test.conf:3:11: expected a path prefix, 'exact /path' or a pattern "
                           "after 'files', not '/w/{a,b.php': "));
    CHECK(failure(site("    files /a\n")).starts_with("test.conf:"));
    CHECK(failure(site("    files /a {\n    }\n    response /a {\n    }\n")) ==
          "test.conf:5:14: another handler of this site has the route '/a'");
    CHECK(failure(site("    files exact /a {\n    }\n    files exact /a {\n    }\n")) ==
          "test.conf:5:11: another handler of this site has the route 'exact /a'");
    // A prefix and an exact route of the same path are two routes.
    load(site("    files /a {\n    }\n    files exact /a {\n    }\n"));
}

TEST_CASE("every handler takes cache_control, expires, headers and error_page", "[config]") {
    const Config c = load(R"(site {
    root = /srv
    error_page = 404 /errors/404.html
    error_page = 500 502 503 504 file /srv/errors/50x.html
    headers {
        Strict-Transport-Security = max-age=63072000
        X-Content-Type-Options = nosniff
    }
    fastcgi / {
        pass = unix:/run/php.sock
        cache_control = no-store
        error_page = 404 /index.php
        headers {
            add Link = "</a.css>; rel=preload"
            add Link = </b.js>
            remove X-Powered-By Via
            X-Frame-Options = DENY
        }
        params {
            APP_ENV = production
        }
    }
    response /hello {
        expires = 7d
        cache_control = public
    }
    redirect /old {
        to = /new
        expires = 1h
    }
}
)");
    const Site& s = c.sites[0];
    REQUIRE(s.error_pages.size() == 2);
    CHECK(s.error_pages[0].statuses == std::vector<int>{404});
    CHECK(s.error_pages[0].kind == ErrorPage::Kind::route);
    CHECK(s.error_pages[0].target == "/errors/404.html");
    CHECK(s.error_pages[1].statuses == std::vector<int>{500, 502, 503, 504});
    CHECK(s.error_pages[1].kind == ErrorPage::Kind::file);
    CHECK(s.error_pages[1].target == "/srv/errors/50x.html");
    REQUIRE(s.headers.size() == 2);
    CHECK(s.headers[0].op == HeaderEdit::Op::set);
    CHECK(s.headers[0].name == "Strict-Transport-Security");
    CHECK(s.headers[0].value == "max-age=63072000");

    const auto& php = handler<FastcgiHandler>(c, 0);
    CHECK(php.cache_control == "no-store");
    REQUIRE(php.error_pages.size() == 1);
    CHECK(php.error_pages[0].target == "/index.php");
    REQUIRE(php.headers.size() == 5);
    CHECK((php.headers[0].op == HeaderEdit::Op::add && php.headers[0].name == "Link" &&
           php.headers[0].value == "</a.css>; rel=preload"));
    CHECK(php.headers[1].value == "</b.js>");
    CHECK((php.headers[2].op == HeaderEdit::Op::remove && php.headers[2].name == "X-Powered-By"));
    CHECK((php.headers[3].op == HeaderEdit::Op::remove && php.headers[3].name == "Via"));
    CHECK((php.headers[4].op == HeaderEdit::Op::set && php.headers[4].value == "DENY"));
    CHECK(php.params.size() == 1);

    const auto& hello = handler<ResponseHandler>(c, 1);
    CHECK(hello.expires == std::optional<std::chrono::milliseconds>(7 * 24h));
    CHECK(hello.cache_control == "public");
    CHECK(handler<RedirectHandler>(c, 2).expires == std::optional<std::chrono::milliseconds>(1h));
    CHECK_FALSE(handler<FilesHandler>(load(site("    files / {\n    }\n")), 0).expires);
}

TEST_CASE("headers, error_page and expires errors", "[config]") {
    CHECK(failure(site("    files / {\n        headers {\n            Content-Length = 5\n"
                       "        }\n    }\n")) ==
          "test.conf:5:13: 'Content-Length' is the server's own: it cannot be set here");
    CHECK(failure(site("    headers {\n        remove server\n    }\n")) ==
          "test.conf:4:16: 'server' is the server's own: it cannot be set here");
    CHECK(failure(site("    headers {\n        X-A = \"a\\nb\"\n    }\n")) ==
          "test.conf:4:15: a header value holds no line break or NUL");
    CHECK(failure(site("    headers {\n        X-A =\n    }\n")) ==
          "test.conf:4:14: expected a value (to drop a field: remove X-A)");
    CHECK(failure(site("    headers {\n        set X-A = b\n    }\n")) ==
          "test.conf:4:13: expected 'Name = value', 'add Name = value' or 'remove Name' in "
          "headers");
    CHECK(failure(site("    headers {\n        X-A = b\n        remove x-a\n    }\n")) ==
          "test.conf:3:5: headers sets or removes 'x-a' twice");
    CHECK(failure(site("    headers a {\n    }\n")) == "test.conf:3:13: headers takes no argument");
    CHECK(failure(site("    headers {\n        sub {\n        }\n    }\n")) ==
          "test.conf:4:9: expected 'Name = value', 'add Name = value' or 'remove Name' in "
          "headers");
    CHECK(failure(site("    error_page = 404\n")) ==
          "test.conf:3:18: expected one path after the statuses: write 'error_page = STATUS... "
          "/path' or 'error_page = STATUS... file /path'");
    CHECK(failure(site("    error_page = 302 /x\n")) ==
          "test.conf:3:18: expected error statuses from 400 to 599, not '302'");
    CHECK(failure(site("    error_page = /x\n")) ==
          "test.conf:3:18: expected a status: write 'error_page = STATUS... /path' or "
          "'error_page = STATUS... file /path'");
    CHECK(failure(site("    error_page = 404 /a\n    error_page = 403 404 /b\n")) ==
          "test.conf:4:18: status 404 has an error page already");
    CHECK(failure(site("    error_page = 404 file errors/404.html\n"))
              .starts_with("test.conf:3:18: expected one path after the statuses"));
    CHECK(failure(site("    files / {\n        expires = 1d\n        cache_control = public, "
                       "max-age=60\n    }\n")) ==
          "test.conf:3:5: files / sets max-age by 'cache_control' and by 'expires': one of them");
    CHECK(failure(site("    files / {\n        expires = 1d\n        headers {\n            "
                       "cache-control = no-store\n        }\n    }\n")) ==
          "test.conf:3:5: files / says Cache-Control in 'headers' and by 'cache_control' or "
          "'expires': one of them");
    CHECK(failure(site("    files / {\n        expires = soon\n    }\n"))
              .starts_with("test.conf:4:19: "));
    CHECK(failure(site("    response / {\n        expire = 1d\n    }\n")) ==
          "test.conf:4:9: unknown key 'expire' in a response handler (did you mean 'expires'?)");
    CHECK(failure(site("    response / {\n        params {\n        }\n    }\n")) ==
          "test.conf:4:9: unknown section 'params' in a response handler (expected headers)");
    // A qualified key where none is expected.
    CHECK(failure(site("    files / {\n        add index = a.html\n    }\n")) ==
          "test.conf:4:13: expected 'key = value', not 'add index ='");
}

TEST_CASE("alias, deny and scripts", "[config]") {
    const Config c = load(site(R"(    files exact /favicon.ico {
        alias = /srv/w/images/favicon.ico
    }
    files /static {
        alias = /srv/assets
        deny = /static/private composer.json *.less /static/**/*.md
    }
    fastcgi /w {
        pass = 127.0.0.1:9000
        scripts = /w/{index,load,api}.php /w/rest.php
        fallback = /w/index.php
        deny = /w/images/deleted README*
    }
)"));
    CHECK(handler<FilesHandler>(c, 0).alias == "/srv/w/images/favicon.ico");
    CHECK(handler<FilesHandler>(c, 1).alias == "/srv/assets");
    CHECK(handler<FilesHandler>(c, 1).deny == std::vector<std::string>{"/static/private",
                                                                       "composer.json", "*.less",
                                                                       "/static/**/*.md"});
    CHECK(handler<FastcgiHandler>(c, 2).scripts ==
          std::vector<std::string>{"/w/{index,load,api}.php", "/w/rest.php"});

    CHECK(failure(site("    files /a {\n        alias = /b\n        root = /c\n    }\n")) ==
          "test.conf:3:5: files /a has both 'root' and 'alias': one of them");
    CHECK(failure(site("    files *.css {\n        alias = /b\n    }\n")) ==
          "test.conf:3:5: files *.css has a pattern route: 'alias' needs a prefix or an exact "
          "route");
    CHECK(failure(site("    files /a {\n        alias = b\n    }\n")) ==
          "test.conf:4:17: expected an absolute path, not 'b'");
    CHECK(failure(site("    files /a {\n        deny = /x {a\n    }\n"))
              .starts_with("test.conf:4:16: bad pattern '{a': "));
    CHECK(failure(site("    fastcgi / {\n        pass = 127.0.0.1:9000\n        scripts = "
                       "/index.php\n        fallback = /app.php\n    }\n")) ==
          "test.conf:3:5: fastcgi / has a 'fallback' that 'scripts' does not allow");
    // The handler reads a fallback without its '/' as from the root.
    load(site("    fastcgi / {\n        pass = 127.0.0.1:9000\n        scripts = /index.php\n"
              "        fallback = index.php\n    }\n"));
}

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
