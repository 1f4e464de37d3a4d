// The Router: the site by Host, then the handler with the longest prefix of
// the path, matched on segment boundaries.

#include "http/router.hpp"
#include "util/path_pattern.hpp"

#include <catch2/catch.hpp>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

using namespace weft::http;
using weft::prefix_matches;

namespace {

// A handler known by its site and prefix: "site:prefix".
class Named : public Handler {
public:
    Named(std::string site, std::string prefix) : Handler(prefix), name_(site + ":" + prefix) {}
    Named(std::string site, Route route)
        : Handler(std::move(route)), name_(site + ":" + this->route().text()) {}
    void serve(Exchange&) const override {}
    std::string describe() const override { return "named"; }
    const std::string& name() const { return name_; }

private:
    std::string name_;
};

Router::Site site(const std::string& name, std::initializer_list<std::string> hosts,
                  std::initializer_list<std::string> prefixes) {
    Router::Site s;
    s.hosts = hosts;
    for (const std::string& prefix : prefixes)
        s.handlers.push_back(std::make_unique<Named>(name, prefix));
    return s;
}

// A route from its text as a configuration writes it: "exact /x", or a prefix
// or a pattern.
Route route_from(std::string_view text) {
    if (text.starts_with("exact ")) return Route::exact(std::string(text.substr(6)));
    std::string error;
    std::optional<Route> route = Route::from_pattern(text, error);
    INFO(text << ": " << error);
    REQUIRE(route);
    return *route;
}

Router::Site routes(std::initializer_list<std::string_view> texts) {
    Router::Site s;
    for (std::string_view text : texts)
        s.handlers.push_back(std::make_unique<Named>("s", route_from(text)));
    return s;
}

// The handler's name, or "none".
std::string route(const Router& router, std::string_view host, std::string_view path) {
    const Handler* handler = router.route(host, path);
    return handler ? static_cast<const Named*>(handler)->name() : "none";
}

} // namespace

TEST_CASE("a prefix matches on segment boundaries, or anything after its own '/'", "[http]") {
    CHECK(prefix_matches("/static", "/static"));
    CHECK(prefix_matches("/static", "/static/a.css"));
    CHECK_FALSE(prefix_matches("/static", "/staticky"));
    CHECK_FALSE(prefix_matches("/static", "/stat"));
    CHECK(prefix_matches("/static/", "/static/a.css"));
    CHECK_FALSE(prefix_matches("/static/", "/static"));
    CHECK(prefix_matches("/", "/anything/at/all"));
    CHECK(prefix_matches("/a.php", "/a.php"));
    CHECK_FALSE(prefix_matches("/a.php", "/a.phps"));
}

TEST_CASE("the longest matching prefix wins, whatever order the handlers came in", "[http]") {
    Router router;
    router.add_site(site("s", {}, {"/", "/static", "/static/img/", "/api", "/static/img/big"}));
    // path, then the handler that serves it
    const std::pair<std::string_view, std::string_view> cases[] = {
        {"/", "s:/"},
        {"/index.html", "s:/"},
        {"/staticky", "s:/"},
        {"/static", "s:/static"},
        {"/static/a.css", "s:/static"},
        {"/static/img", "s:/static"},
        {"/static/img/a.png", "s:/static/img/"},
        {"/static/img/big", "s:/static/img/big"},
        {"/static/img/big/1.png", "s:/static/img/big"},
        {"/static/img/bigger.png", "s:/static/img/"},
        {"/api/v1", "s:/api"},
    };
    for (const auto& [path, handler] : cases) {
        INFO(path);
        CHECK(route(router, "x", path) == handler);
    }
}

TEST_CASE("a path no prefix matches has no handler", "[http]") {
    Router router;
    router.add_site(site("s", {}, {"/app", "/static/"}));
    CHECK(route(router, "x", "/app/run") == "s:/app");
    CHECK(route(router, "x", "/other") == "none");
    CHECK(route(router, "x", "/static") == "none");
    CHECK(route(router, "x", "/") == "none");
}

TEST_CASE("the site is chosen by Host, case-insensitively and without the port", "[http]") {
    Router router;
    router.add_site(site("a", {"example.com", "www.example.com"}, {"/"}));
    router.add_site(site("default", {}, {"/"}));
    router.add_site(site("b", {"other.org", "[::1]"}, {"/", "/b"}));
    // Host, path, then the handler that serves them
    const std::tuple<std::string_view, std::string_view, std::string_view> cases[] = {
        {"example.com", "/x", "a:/"},      {"WWW.Example.COM", "/x", "a:/"},
        {"example.com:8080", "/x", "a:/"}, {"other.org", "/b/c", "b:/b"},
        {"[::1]:8080", "/b", "b:/b"},      {"[::1]", "/b", "b:/b"},
        {"example.co", "/x", "default:/"}, {"sub.example.com", "/x", "default:/"},
        {"", "/x", "default:/"},
    };
    for (const auto& [host, path, handler] : cases) {
        INFO(host << " " << path);
        CHECK(route(router, host, path) == handler);
    }
}

TEST_CASE("a Host no site names goes to the first site naming none, else to the first site",
          "[http]") {
    SECTION("the first site without hosts is the default, wherever it is") {
        Router router;
        router.add_site(site("a", {"a.test"}, {"/"}));
        router.add_site(site("first", {}, {"/"}));
        router.add_site(site("second", {}, {"/"}));
        CHECK(route(router, "b.test", "/") == "first:/");
        CHECK(route(router, "a.test", "/") == "a:/");
    }
    SECTION("with every site named, the first") {
        Router router;
        router.add_site(site("a", {"a.test"}, {"/"}));
        router.add_site(site("b", {"b.test"}, {"/"}));
        CHECK(route(router, "c.test", "/") == "a:/");
        CHECK(route(router, "b.test", "/") == "b:/");
    }
    SECTION("a single site serves every Host") {
        Router router;
        router.add_site(site("a", {"a.test"}, {"/"}));
        CHECK(route(router, "c.test", "/") == "a:/");
    }
    SECTION("no site: no handler") {
        Router router;
        CHECK(route(router, "a.test", "/") == "none");
    }
}

TEST_CASE("a route is a prefix, an exact path or a pattern, written as in a configuration",
          "[http]") {
    CHECK(route_from("/static").kind == Route::Kind::prefix);
    CHECK(route_from("/static").text() == "/static");
    CHECK(route_from("exact /").kind == Route::Kind::exact);
    CHECK(route_from("exact /").text() == "exact /");
    CHECK(route_from("/w/*.php").kind == Route::Kind::pattern);
    CHECK(route_from("/w/*.php").text() == "/w/*.php");
    CHECK(route_from("*.css").kind == Route::Kind::pattern);
    // An escaped wildcard is a letter: a prefix, its path unescaped.
    CHECK(route_from("/a\\*").kind == Route::Kind::prefix);
    CHECK(route_from("/a\\*").path == "/a*");
    std::string error;
    CHECK_FALSE(Route::from_pattern("/w/{a,b", error));
    CHECK(error == "unclosed '{' at 4");
}

TEST_CASE("exact routes come first, then patterns in the order added, then the longest prefix",
          "[http]") {
    Router router;
    router.add_site(routes({"/", "/w", "/w/static", "*.css", "/w/{index,api}.php", "/w/*.php",
                            "exact /", "exact /w/api.php", "/w/**"}));
    // path, then the handler that serves it
    const std::pair<std::string_view, std::string_view> cases[] = {
        {"/", "s:exact /"},
        {"/robots.txt", "s:/"},
        {"/w/index.php", "s:/w/{index,api}.php"},
        {"/w/api.php", "s:exact /w/api.php"},
        {"/w/other.php", "s:/w/*.php"},
        {"/w/static/a.css", "s:*.css"},
        {"/a.css", "s:*.css"},
        {"/w/static/a.js", "s:/w/**"},
        {"/w/a/b.php", "s:/w/**"},
        {"/w", "s:/w"},
        {"/wx", "s:/"},
    };
    for (const auto& [path, handler] : cases) {
        INFO(path);
        CHECK(route(router, "x", path) == handler);
    }
}

TEST_CASE("an exact route serves only its own path", "[http]") {
    Router router;
    router.add_site(routes({"exact /", "exact /a/"}));
    CHECK(route(router, "x", "/") == "s:exact /");
    CHECK(route(router, "x", "/a/") == "s:exact /a/");
    CHECK(route(router, "x", "/a") == "none");
    CHECK(route(router, "x", "/robots.txt") == "none");
    CHECK(route(router, "x", "/a/b") == "none");
}

TEST_CASE("an exact route of any length matches its path byte for byte", "[http]") {
    // Each length a word compare handles differently (1 to 3, 4 to 7, 8 to
    // 16, more), and a path one byte off at each position.
    for (std::size_t length = 1; length <= 24; ++length) {
        std::string path = "/";
        for (std::size_t i = 1; i < length; ++i) path += static_cast<char>('a' + i % 26);
        Router router;
        router.add_site(routes({"exact " + path}));
        INFO(path);
        CHECK(route(router, "x", path) == "s:exact " + path);
        for (std::size_t i = 0; i < length; ++i) {
            std::string off = path;
            off[i] = off[i] == 'z' ? 'y' : 'z';
            INFO(off);
            CHECK(route(router, "x", off) == "none");
        }
        CHECK(route(router, "x", path + "x") == "none");
        CHECK(route(router, "x", path.substr(0, length - 1)) == "none");
    }
}

TEST_CASE("a prefix route of any length matches its bytes byte for byte", "[http]") {
    for (std::size_t length = 2; length <= 24; ++length) {
        std::string prefix = "/";
        for (std::size_t i = 1; i < length; ++i) prefix += static_cast<char>('a' + i % 26);
        Router router;
        router.add_site(routes({prefix}));
        INFO(prefix);
        CHECK(route(router, "x", prefix) == "s:" + prefix);
        CHECK(route(router, "x", prefix + "/more") == "s:" + prefix);
        CHECK(route(router, "x", prefix + "more") == "none");
        for (std::size_t i = 1; i < length; ++i) {
            std::string off = prefix + "/more";
            off[i] = off[i] == 'z' ? 'y' : 'z';
            INFO(off);
            CHECK(route(router, "x", off) == "none");
        }
    }
}
