// The files handler's create(): its root must be a directory that opens
// (files/handler.hpp).

#include "handlers/build.hpp"
#include "handlers/fastcgi/handler.hpp"
#include "handlers/files/handler.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace weft::handlers;

TEST_CASE("create: the root must be a directory that opens", "[files]") {
    TempDir dir;
    dir.write("file", "x");
    weft::config::FilesHandler config;
    config.route.path = "/static";
    std::string error;
    const weft::config::Config server;
    weft::config::Site site;
    const BuildContext context{server, site, {}};

    config.root = (dir.path / "missing").string();
    CHECK(create(config, context, error) == nullptr);
    CHECK(error ==
          "files /static: cannot open the root " + config.root + ": No such file or directory");

    config.root = (dir.path / "file").string();
    CHECK(create(config, context, error) == nullptr);
    CHECK(error.find("Not a directory") != std::string::npos);

    config.root = "";
    CHECK(create(config, context, error) == nullptr);
    CHECK(error == "files /static: no root: set one in the handler or its site");

    // The site's root when the handler has none.
    error.clear();
    site.root = dir.path.string();
    const auto handler = create(config, context, error);
    REQUIRE(handler != nullptr);
    CHECK(error.empty());
    CHECK(handler->prefix() == "/static");
}

TEST_CASE("create: an alias is the directory opened, or names the file", "[files]") {
    TempDir dir;
    std::filesystem::create_directory(dir.path / "assets");
    dir.write("assets/a.css", "x");
    const weft::config::Config server;
    weft::config::Site site;
    site.root = (dir.path / "missing-root").string(); // never opened under an alias
    const BuildContext context{server, site, {}};
    std::string error;
    weft::config::FilesHandler config;
    config.route.path = "/static";
    config.alias = (dir.path / "assets").string() + "/";
    auto handler = create(config, context, error);
    REQUIRE(handler != nullptr);
    CHECK(handler->describe() == "files from " + (dir.path / "assets").string());

    config.route = {weft::config::Route::Kind::exact, "/a.css"};
    config.alias = (dir.path / "assets" / "a.css").string();
    handler = create(config, context, error);
    REQUIRE(handler != nullptr);
    CHECK(handler->describe() == "files from " + config.alias);

    config.alias = (dir.path / "missing" / "a.css").string();
    CHECK(create(config, context, error) == nullptr);
    CHECK(error == "files /a.css: cannot open the alias's directory " +
                       (dir.path / "missing").string() + ": No such file or directory");
}

TEST_CASE("create: a fastcgi fallback must lie beneath the route its alias maps", "[files]") {
    TempDir dir;
    std::filesystem::create_directory(dir.path / "app");
    const weft::config::Config server;
    const weft::config::Site site;
    const BuildContext context{server, site, {}};
    weft::config::FastcgiHandler config;
    config.route.path = "/app";
    config.alias = (dir.path / "app").string();
    std::string error;
    config.pass = {*weft::Address::parse("127.0.0.1:9", error)};
    config.fallback = "/app/index.php";
    CHECK(create(config, context, error) != nullptr);
    config.fallback = "/index.php";
    CHECK(create(config, context, error) == nullptr);
    CHECK(error == "fastcgi /app: the fallback /index.php is not beneath the route the alias maps");
}
