// Where a request's path lies on disk: the URL path beneath the root, or
// with `alias` what follows the route's prefix beneath the alias
// (files/path_map.hpp).

#include "handlers/files/path_map.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>

using namespace weft::handlers;
using weft::config::Route;

namespace {

Route prefix(std::string path) {
    return {Route::Kind::prefix, std::move(path)};
}
Route exact(std::string path) {
    return {Route::Kind::exact, std::move(path)};
}

} // namespace

TEST_CASE("path map: without an alias the URL path is the path beneath the root", "[files]") {
    const PathMap map(prefix("/static"), "/srv/www/", "");
    CHECK_FALSE(map.aliased());
    CHECK(map.directory() == "/srv/www/");
    CHECK(map.local("/static/a.css") == "/static/a.css");
    CHECK(map.local("/") == "/");
}

TEST_CASE("path map: an alias stands for the route's prefix", "[files]") {
    for (const char* route : {"/static", "/static/"}) {
        for (const char* alias : {"/srv/assets", "/srv/assets/", "/srv/assets//"}) {
            const PathMap map(prefix(route), "/srv/www", alias);
            CHECK(map.aliased());
            CHECK(map.directory() == "/srv/assets");
            CHECK(map.source() == "/srv/assets");
            CHECK(map.local("/static/a.css") == "/a.css");
            CHECK(map.local("/static/css/a.css") == "/css/a.css");
            CHECK(map.local("/static/") == "/");
            // Routes match whole segments: nginx's /static../x trap maps nothing.
            CHECK(map.local("/static../secret") == std::nullopt);
            CHECK(map.local("/staticky") == std::nullopt);
            CHECK(map.local("/other/a.css") == std::nullopt);
        }
    }
    // The directory itself without its '/': "" (the handler redirects).
    CHECK(PathMap(prefix("/static"), "", "/srv/assets").local("/static") == "");
    // The root route: the alias is a root by another name.
    const PathMap root(prefix("/"), "", "/srv/assets");
    CHECK(root.local("/a.css") == "/a.css");
    CHECK(root.local("/") == "/");
}

TEST_CASE("path map: on an exact route the alias names the file", "[files]") {
    const PathMap map(exact("/favicon.ico"), "/srv/www", "/srv/w/images/fav.ico");
    CHECK(map.directory() == "/srv/w/images");
    CHECK(map.source() == "/srv/w/images/fav.ico");
    CHECK(map.local("/favicon.ico") == "/fav.ico");
    // What a prefix would take is nothing beneath a file.
    CHECK(map.local("/favicon.ico/x") == std::nullopt);
    CHECK(map.local("/favicon.icon") == std::nullopt);
    const PathMap top(exact("/f"), "", "/fav.ico");
    CHECK(top.directory() == "/");
    CHECK(top.source() == "/fav.ico");
    CHECK(top.local("/f") == "/fav.ico");
    // A trailing '/' names a directory the route's path stands for.
    const PathMap directory(exact("/docs/"), "", "/srv/docs/");
    CHECK(directory.directory() == "/srv/docs");
    CHECK(directory.local("/docs/") == "/");
}
