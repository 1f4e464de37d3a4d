// The files handler's create(): its root must be a directory that opens
// (files/handler.hpp).

#include "handlers/build.hpp"
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
