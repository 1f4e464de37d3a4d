// Path normalisation: decoded once, dot segments resolved, never above the
// root, and the result fits in the caller's buffer.

#include "http/path.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <string>

using namespace weft::http;
using namespace std::string_view_literals;

namespace {

// normalize_path into a buffer of exactly raw.size() bytes (on the heap, so
// ASan sees a write past it), as text.
std::optional<std::string> normalized(std::string_view raw) {
    const auto out = std::make_unique<char[]>(raw.size());
    const std::optional<std::string_view> result = normalize_path(raw, out.get());
    if (!result) return std::nullopt;
    REQUIRE(result->data() == out.get());
    REQUIRE(result->size() <= raw.size());
    return std::string(*result);
}

} // namespace

TEST_CASE("paths: plain ones are unchanged", "[http]") {
    for (std::string_view raw : {"/"sv, "/a"sv, "/a/b"sv, "/a/b/"sv, "/index.html"sv,
                                 "/a.b/c..d/...e/.f/..g"sv, "/~user/x-y_z"sv}) {
        INFO(raw);
        CHECK(normalized(raw) == std::string(raw));
    }
}

TEST_CASE("paths: empty and '.' segments go, '..' removes one, a trailing slash stays", "[http]") {
    const std::pair<std::string_view, std::string_view> cases[] = {
        {"//", "/"},
        {"///a//b///", "/a/b/"},
        {"/./", "/"},
        {"/.", "/"},
        {"/a/./b", "/a/b"},
        {"/a/.", "/a/"},
        {"/a/b/..", "/a/"},
        {"/a/b/../", "/a/"},
        {"/a/b/../c", "/a/c"},
        {"/a/..", "/"},
        {"/a/../", "/"},
        {"/a/b/../../c/", "/c/"},
        {"/a/./../b/./c", "/b/c"},
        {"/a//../b", "/b"},
        {"/a/b/c/../../../", "/"},
        {"/..a/b..", "/..a/b.."},
        {"/.../", "/.../"},
    };
    for (const auto& [raw, expected] : cases) {
        INFO(raw);
        CHECK(normalized(raw) == std::string(expected));
    }
}

TEST_CASE("paths: each %XX is decoded once, either case, before normalising", "[http]") {
    const std::pair<std::string_view, std::string_view> cases[] = {
        {"/%41%42c", "/ABc"},
        {"/a%20b", "/a b"},
        {"/%e2%82%ac%E2%82%AC", "/\xe2\x82\xac\xe2\x82\xac"},
        {"/a%2Fb", "/a/b"},
        {"/a%2f..%2Fb", "/b"},
        {"/a/%2e%2E/b", "/b"},
        {"/a/%2e/b", "/a/b"},
        {"/%252e%252e/x", "/%2e%2e/x"},
        {"/%25", "/%"},
        {"/a%3Fb", "/a?b"},
        {"/%2F%2F", "/"},
    };
    for (const auto& [raw, expected] : cases) {
        INFO(raw);
        CHECK(normalized(raw) == std::string(expected));
    }
}

TEST_CASE("paths: refused when relative, badly encoded, holding NUL or climbing out", "[http]") {
    for (std::string_view raw :
         {""sv,      "a"sv,      "a/b"sv,     "*"sv,         "%2Fa"sv,
          "/%"sv,    "/%4"sv,    "/%4g"sv,    "/%g4"sv,      "/a%"sv,
          "/%%41"sv, "/% 41"sv,  "/a\0b"sv,   "/%00"sv,      "/a%00b"sv,
          "/.."sv,   "/../"sv,   "/../a"sv,   "/a/../.."sv,  "/a/../../b"sv,
          "/./.."sv, "/..%2F"sv, "/%2e%2e"sv, "/%2E%2E/a"sv, "/a/%2e%2e/%2e%2e/b"sv,
          "//..//"sv}) {
        INFO(std::string(raw));
        CHECK(normalized(raw) == std::nullopt);
    }
}
