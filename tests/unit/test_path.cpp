// Path normalisation: decoded once, dot segments resolved, never above the
// root, and the result fits in the caller's buffer.

#include "http/path.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace weft::http;
using namespace std::string_view_literals;

namespace {

// normalize_path from a copy of raw on the heap into a buffer of exactly
// raw.size() bytes (so ASan sees a read or a write past either), as text.
// The result is raw itself, unchanged, or lies in the buffer.
std::optional<std::string> normalized(std::string_view raw) {
    const std::vector<char> in(raw.begin(), raw.end());
    std::vector<char> out(raw.size());
    const std::optional<std::string_view> result =
        normalize_path({in.data(), in.size()}, out.data());
    if (!result) return std::nullopt;
    if (result->data() == in.data())
        REQUIRE(result->size() == raw.size());
    else
        REQUIRE(result->data() == out.data());
    REQUIRE(result->size() <= raw.size());
    return std::string(*result);
}

// True when normalize_path hands back raw itself (nothing copied).
bool kept_in_place(std::string_view raw) {
    std::string out(raw.size(), '\0');
    const std::optional<std::string_view> result = normalize_path(raw, out.data());
    return result && result->data() == raw.data();
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

TEST_CASE("paths: a normal one is handed back as it is, any other is rewritten", "[http]") {
    // Every length around the eight-byte words the check reads, with the
    // telling bytes at every position.
    for (std::size_t length = 1; length <= 24; ++length) {
        const std::string plain = "/" + std::string(length - 1, 'a');
        INFO(plain);
        CHECK(kept_in_place(plain));
        if (length > 1) CHECK(kept_in_place(plain + "/"));
        CHECK_FALSE(kept_in_place(plain + "/."));
        CHECK_FALSE(kept_in_place(plain + "/.."));
        for (std::size_t at = 1; at <= length; ++at) {
            for (std::string_view odd : {"/./"sv, "//"sv, "%41"sv, "/../"sv}) {
                const std::string path = plain.substr(0, at) + std::string(odd) + plain.substr(at);
                INFO(path);
                CHECK_FALSE(kept_in_place(path));
                CHECK(normalized(path) != std::optional<std::string>(path));
            }
            std::string nul = plain;
            if (at < length) {
                nul[at] = '\0';
                CHECK(normalized(nul) == std::nullopt);
            }
        }
    }
    for (std::string_view raw : {"/"sv, "/a/b/"sv, "/a.b/c-d_e~f"sv, "/index.html"sv,
                                 "/static/css/site.min.css"sv, "/a./b"sv, "/$x"sv, "/.a/b"sv}) {
        INFO(raw);
        CHECK(normalized(raw) == std::string(raw));
    }
}

TEST_CASE("append_percent_encoded keeps unreserved bytes (and slashes when asked)", "[path]") {
    std::string encoded;
    append_percent_encoded(encoded, "/a b/c~d_e.f-g/", true);
    CHECK(encoded == "/a%20b/c~d_e.f-g/");
    encoded.clear();
    append_percent_encoded(encoded, "/a\r\n", false);
    CHECK(encoded == "%2Fa%0D%0A");
    encoded.clear();
    append_percent_encoded(encoded, "\\evil:%\xff", true);
    CHECK(encoded == "%5Cevil%3A%25%FF");
}
