// Path patterns: a prefix, a glob over the whole path, or a name pattern over
// the last segment; wildcards, groups and escapes; errors with where they are.

#include "util/path_pattern.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

using namespace weft;
using Form = PathPattern::Form;

namespace {

PathPattern compiled(std::string_view text) {
    std::string error;
    std::optional<PathPattern> pattern = PathPattern::compile(text, error);
    INFO(text << ": " << error);
    REQUIRE(pattern);
    CHECK(error.empty());
    CHECK(pattern->text() == text);
    return *pattern;
}

// Checks `text` against paths it must match and paths it must not.
void check_pattern(std::string_view text, std::initializer_list<std::string_view> match,
                   std::initializer_list<std::string_view> no_match) {
    const PathPattern pattern = compiled(text);
    for (std::string_view path : match) {
        INFO(text << " should match " << path);
        CHECK(pattern.matches(path));
    }
    for (std::string_view path : no_match) {
        INFO(text << " should not match " << path);
        CHECK_FALSE(pattern.matches(path));
    }
}

// The message compile() gives for `text`, and the 0-based offset it names.
std::pair<std::string, std::size_t> failure(std::string_view text) {
    std::string error;
    std::size_t offset = 999;
    const std::optional<PathPattern> pattern = PathPattern::compile(text, error, offset);
    INFO(text);
    CHECK_FALSE(pattern);
    CHECK(!error.empty());
    return {error, offset};
}

} // namespace

TEST_CASE("the text says the form: prefix, glob or name", "[http]") {
    CHECK(compiled("/static").form() == Form::prefix);
    CHECK(compiled("/").form() == Form::prefix);
    CHECK(compiled("/a\\*b").form() == Form::prefix); // an escaped wildcard is a letter
    CHECK(compiled("/w/*.php").form() == Form::glob);
    CHECK(compiled("/w/{a,b}").form() == Form::glob);
    CHECK(compiled("/a?").form() == Form::glob);
    CHECK(compiled("*.less").form() == Form::name);
    CHECK(compiled("composer.json").form() == Form::name);
    CHECK(compiled("README*").form() == Form::name);
}

TEST_CASE("a prefix matches on segment boundaries, or anything after its own '/'", "[http]") {
    check_pattern("/static", {"/static", "/static/a.css", "/static/img/a.png"},
                  {"/staticky", "/stat", "/", "/x/static"});
    check_pattern("/static/", {"/static/", "/static/a.css"}, {"/static", "/staticky"});
    check_pattern("/", {"/", "/anything/at/all"}, {});
    check_pattern("/a.php", {"/a.php", "/a.php/info"}, {"/a.phps", "/a.ph"});
    check_pattern("/a\\*", {"/a*", "/a*/b"}, {"/ab", "/a"});
}

TEST_CASE("'*' matches a run of bytes within one segment", "[http]") {
    check_pattern("/w/*.php", {"/w/index.php", "/w/.php", "/w/a.b.php"},
                  {"/w/a/b.php", "/w/index.phps", "/w/index.ph", "/x/a.php", "/w.php"});
    check_pattern("/a*", {"/a", "/abc"}, {"/a/b", "/b"});
    check_pattern("/*/x", {"/a/x", "//x"}, {"/a/b/x", "/x"});
    check_pattern("/*a*b*", {"/ab", "/xaxbx", "/bab"}, {"/ba", "/a/b"});
}

TEST_CASE("'**' matches any run, slashes included", "[http]") {
    check_pattern("/static/**", {"/static/", "/static/a", "/static/a/b/c.css"},
                  {"/static", "/staticky"});
    check_pattern("/**.md", {"/.md", "/a.md", "/a/b/c.md"}, {"/a.mdx", "/a/md"});
    check_pattern("/w/**/*.md", {"/w/a.md", "/w/x/a.md", "/w/x/y/a.md", "/w//a.md"},
                  {"/wa.md", "/w/x/a.mdx", "/w/x/y/a/b"});
}

TEST_CASE("'/**/' takes no directory or any number of them", "[http]") {
    check_pattern("/w/**/README.md", {"/w/README.md", "/w/a/README.md", "/w/a/b/README.md"},
                  {"/wREADME.md", "/w/aREADME.md", "/w/a/README.mdx"});
    check_pattern("/**/composer.json", {"/composer.json", "/vendor/x/composer.json"},
                  {"/composer.jsonx", "/xcomposer.json"});
    check_pattern("/a/**/", {"/a/", "/a/b/", "/a/b/c/"}, {"/a", "/a/b"});
    check_pattern("/{x,y}/**/*.{less,md}", {"/x/a.md", "/y/q/r/b.less"}, {"/x/a.css", "/z/a.md"});
    // Only between two '/': elsewhere '**' is any run, at least what it sits between.
    check_pattern("/a**/b", {"/a/b", "/ax/y/b"}, {"/ab"});
    check_pattern("/a/**b", {"/a/b", "/a/x/yb"}, {"/ab"});
    check_pattern("/**", {"/", "/a/b"}, {});
    check_pattern("/a**b**c", {"/abc", "/a/b/c", "/axxbyyc"}, {"/ab", "/acb"});
}

TEST_CASE("'?' matches one byte but '/'", "[http]") {
    check_pattern("/a?c", {"/abc", "/a.c"}, {"/ac", "/a/c", "/abbc"});
    check_pattern("/??", {"/ab"}, {"/a", "/abc", "//a"});
}

TEST_CASE("a group matches one of its alternatives", "[http]") {
    check_pattern("/w/{index,api,load}.php", {"/w/index.php", "/w/api.php", "/w/load.php"},
                  {"/w/other.php", "/w/.php", "/w/indexapi.php", "/w/index.phpx"});
    check_pattern("/{a,ab}c", {"/ac", "/abc"}, {"/abbc", "/c"});
    check_pattern("/x.{png,jp*g}", {"/x.png", "/x.jpg", "/x.jpeg"}, {"/x.gif", "/x.jp/g"});
    check_pattern("/{a,b}/{c,d}", {"/a/c", "/b/d"}, {"/a/b", "/c/a"});
    check_pattern("/{**.php,*.css}", {"/a/b.php", "/a.css"}, {"/a/b.css", "/a.txt"});
}

TEST_CASE("an empty alternative matches nothing at all", "[http]") {
    check_pattern("/w{,/**}", {"/w", "/w/", "/w/a/b"}, {"/wx", "/", "/x/w"});
    check_pattern("/a{,b}c", {"/ac", "/abc"}, {"/abbc"});
    check_pattern("/a{,}", {"/a"}, {"/ab"});
}

TEST_CASE("outside a group ',' and '}' are letters", "[http]") {
    check_pattern("/a,b*", {"/a,b", "/a,bc"}, {"/a"});
    check_pattern("/a}*", {"/a}", "/a}b"}, {"/a"});
}

TEST_CASE("a backslash makes the next byte a letter", "[http]") {
    check_pattern("/a\\*b*", {"/a*b", "/a*bc"}, {"/axb", "/a*"});
    check_pattern("/\\{a,b\\}?", {"/{a,b}x"}, {"/a", "/{a,b}"});
    check_pattern("/x\\\\*", {"/x\\", "/x\\y"}, {"/x"});
    check_pattern("/\\?*", {"/?a"}, {"/a"});
    check_pattern("\\*.txt", {"/a/*.txt"}, {"/a/b.txt"});
}

TEST_CASE("a name pattern matches the last segment", "[http]") {
    check_pattern("*.less", {"/a.less", "/x/y/b.less", "/.less"},
                  {"/a.less/x", "/a.lessx", "/a.les"});
    check_pattern("composer.json", {"/composer.json", "/x/composer.json"},
                  {"/composer.json/", "/xcomposer.json", "/composer.jsonx"});
    check_pattern("README*", {"/README", "/d/README.md"}, {"/READ", "/x/aREADME"});
    check_pattern("{a,b}.txt", {"/x/a.txt", "/b.txt"}, {"/c.txt", "/a/b"});
    check_pattern("**x", {"/x", "/a/bx"}, {"/x/a"}); // no '/' in a name: '**' is '*'
    check_pattern("?", {"/a", "/b/c"}, {"/", "/ab"});
}

TEST_CASE("the literal ends are left out of the automaton, and common shapes skip it", "[http]") {
    CHECK(compiled("/static").states() == 1);
    CHECK(compiled("/static/**").states() == 1);
    CHECK(compiled("/w/*.php").states() == 1);
    CHECK(compiled("*.css").states() == 1);
    CHECK(compiled("composer.json").states() == 1);
    CHECK(compiled("/w/{ab,c}.php").states() == 4);
    CHECK(compiled("/**/*.md").states() == 4);
}

TEST_CASE("a bad pattern is an error naming where", "[http]") {
    CHECK(failure("") == std::pair<std::string, std::size_t>{"empty pattern at 1", 0});
    CHECK(failure("/w/{a,b") == std::pair<std::string, std::size_t>{"unclosed '{' at 4", 3});
    CHECK(failure("/{a,{b}}") ==
          std::pair<std::string, std::size_t>{"nested '{' (the '{' at 2 is open) at 5", 4});
    CHECK(failure("/a\\") == std::pair<std::string, std::size_t>{"trailing '\\' at 3", 2});
    CHECK(failure("a/b").second == 1);
    CHECK(failure("a/b").first.starts_with("'/' in a name pattern"));
    CHECK(failure("*.{css,x/y}").second == 8);
    CHECK(failure("a\\/").second == 1);

    // 127 states after the start one fit; the 128th letter is an error, where it is.
    const std::string fits = "/*" + std::string(125, 'a') + "*";
    CHECK(compiled(fits).states() == 128);
    const std::string too_long = "/*" + std::string(126, 'a') + "*";
    const auto [message, offset] = failure(too_long);
    CHECK(message.starts_with("too long"));
    CHECK(offset == too_long.size() - 1);
    // Literal ends are not states: a long lead or tail is fine.
    CHECK(compiled("/" + std::string(500, 'a') + "*" + std::string(500, 'b')).states() == 1);
}

TEST_CASE("a pattern that would make a backtracker explode answers in one pass", "[http]") {
    const std::string as = "/" + std::string(8192, 'a');
    CHECK_FALSE(compiled("/**a**a**a**a**b").matches(as));     // fails on its tail
    CHECK_FALSE(compiled("/**a**a**a**a**b**").matches(as));   // runs the automaton
    CHECK_FALSE(compiled("/*a*a*a*a*a*a*a*a*b*").matches(as)); // idem, one segment
    CHECK(compiled("/**a**a**a**a**a**").matches(as));
    CHECK(compiled("{*a,b}{*a,b}{*a,b}*").matches(std::string_view(as).substr(0, 4096)));
    CHECK_FALSE(compiled("/{a,aa,aaa}{a,aa,aaa}b*").matches(as));
}
