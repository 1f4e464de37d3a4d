// MIME types by file extension (http/mime.hpp).

#include "http/mime.hpp"

#include <catch2/catch.hpp>

#include <string_view>

using weft::http::mime_type;

TEST_CASE("mime: common web types, text ones with a charset", "[files]") {
    CHECK(mime_type("/index.html") == "text/html; charset=utf-8");
    CHECK(mime_type("/a.htm") == "text/html; charset=utf-8");
    CHECK(mime_type("/s/site.css") == "text/css; charset=utf-8");
    CHECK(mime_type("app.js") == "text/javascript; charset=utf-8");
    CHECK(mime_type("mod.mjs") == "text/javascript; charset=utf-8");
    CHECK(mime_type("notes.txt") == "text/plain; charset=utf-8");
    CHECK(mime_type("data.json") == "application/json");
    CHECK(mime_type("logo.svg") == "image/svg+xml");
    CHECK(mime_type("a.png") == "image/png");
    CHECK(mime_type("a.jpg") == "image/jpeg");
    CHECK(mime_type("a.jpeg") == "image/jpeg");
    CHECK(mime_type("a.webp") == "image/webp");
    CHECK(mime_type("a.avif") == "image/avif");
    CHECK(mime_type("f.woff2") == "font/woff2");
    CHECK(mime_type("v.mp4") == "video/mp4");
    CHECK(mime_type("m.wasm") == "application/wasm");
    CHECK(mime_type("site.webmanifest") == "application/manifest+json");
    CHECK(mime_type("a.tar.gz") == "application/gzip");
    CHECK(mime_type("doc.pdf") == "application/pdf");
}

TEST_CASE("mime: extensions are case-insensitive, unknown ones are octet-stream", "[files]") {
    CHECK(mime_type("/A.HTML") == "text/html; charset=utf-8");
    CHECK(mime_type("x.Css") == "text/css; charset=utf-8");
    CHECK(mime_type("x.PnG") == "image/png");
    const std::string_view unknown = "application/octet-stream";
    CHECK(mime_type("README") == unknown);
    CHECK(mime_type("archive.xyz") == unknown);
    CHECK(mime_type("trailing.") == unknown);
    CHECK(mime_type("/dir.d/README") == unknown); // the dot is the directory's
    CHECK(mime_type("x.htmlx") == unknown);
    CHECK(mime_type("x.averyveryverylongextension") == unknown);
    CHECK(mime_type("") == unknown);
}
