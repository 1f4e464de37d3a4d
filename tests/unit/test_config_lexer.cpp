// The configuration's line grammar: statements, quoting, ${VAR}, braces,
// and each error with its line and column.

#include "config/lexer.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace weft::config;
using Kind = Statement::Kind;

namespace {

const Environment kEnv = [](std::string_view name) -> std::optional<std::string> {
    static const std::map<std::string, std::string, std::less<>> vars = {
        {"ROOT", "/srv/www"}, {"PORT", "8080"}, {"EMPTY", ""}};
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
};

std::vector<Statement> statements(std::string_view text) {
    std::vector<Statement> out;
    LexError error;
    INFO(error.line << ":" << error.column << ": " << error.message);
    const bool ok = lex(text, kEnv, out, error);
    INFO(error.line << ":" << error.column << ": " << error.message);
    REQUIRE(ok);
    return out;
}

std::string failure(std::string_view text) {
    std::vector<Statement> out;
    LexError error;
    REQUIRE_FALSE(lex(text, kEnv, out, error));
    return std::to_string(error.line) + ":" + std::to_string(error.column) + ": " + error.message;
}

} // namespace

TEST_CASE("statements: keys, sections with arguments, directives, comments", "[config]") {
    const auto s = statements("# weft\n"
                              "threads = 0   # one per CPU\n"
                              "\n"
                              "site {\n"
                              "    files /static {\n"
                              "        cache_control = public, max-age=3600\n"
                              "    }\n"
                              "}\n"
                              "include   more.conf\n");
    REQUIRE(s.size() == 7);
    CHECK((s[0].kind == Kind::assign && s[0].key == "threads" && s[0].value == "0"));
    CHECK((s[0].line == 2 && s[0].key_column == 1 && s[0].value_column == 11));
    CHECK((s[1].kind == Kind::open && s[1].key == "site" && s[1].argument.empty()));
    CHECK((s[2].kind == Kind::open && s[2].key == "files" && s[2].argument == "/static"));
    CHECK((s[2].line == 5 && s[2].key_column == 5 && s[2].value_column == 11));
    CHECK(s[3].value == "public, max-age=3600");
    CHECK((s[4].kind == Kind::close && s[5].kind == Kind::close));
    CHECK((s[6].kind == Kind::directive && s[6].key == "include" && s[6].value == "more.conf" &&
           s[6].value_column == 11));
}

TEST_CASE("values: the rest of the line, a # only after a space starts a comment", "[config]") {
    const auto s = statements("body = Hello, World!\n"
                              "tag = a#b # not this\n"
                              "empty =\n"
                              "deny = /data /conf\n");
    CHECK(s[0].value == "Hello, World!");
    CHECK(s[1].value == "a#b");
    CHECK(s[2].value.empty());
    CHECK(s[3].value == "/data /conf");
}

TEST_CASE("quoted values take escapes, ${VAR} expands, an escaped $ does not", "[config]") {
    const auto s = statements(R"(body = "say \"hi\"\n\tnow # not a comment"
root = ${ROOT}/html
listen = 127.0.0.1:${PORT}
cost = "\${ROOT} is ${ROOT}"
fallback = ${MISSING:-/index.php}
blank = [${EMPTY}]
)");
    CHECK(s[0].value == "say \"hi\"\n\tnow # not a comment");
    CHECK(s[1].value == "/srv/www/html");
    CHECK(s[2].value == "127.0.0.1:8080");
    CHECK(s[3].value == "${ROOT} is /srv/www");
    CHECK(s[4].value == "/index.php");
    CHECK(s[5].value == "[]");
}

TEST_CASE("a word and a value make a directive, the schema says which exist", "[config]") {
    const auto s = statements("listener 127.0.0.1:${PORT}  # repeatable\nthreads 0\nbare\n");
    CHECK((s[0].kind == Kind::directive && s[0].key == "listener" &&
           s[0].value == "127.0.0.1:8080" && s[0].value_column == 10));
    CHECK((s[1].kind == Kind::directive && s[1].value == "0"));
    CHECK((s[2].kind == Kind::directive && s[2].value.empty()));
}

TEST_CASE("lexing errors name their line and column", "[config]") {
    CHECK(failure("site {\n  x = 1\n") == "1:1: section 'site' is not closed: a '}' is missing");
    CHECK(failure("a = 1\n}\n") == "2:1: '}' without an open section");
    CHECK(failure("site {\n} x\n") == "2:3: '}' stands alone on its line");
    CHECK(failure("= 1\n") == "1:1: expected a key or a section, not '='");
    CHECK(failure("root = ${NOPE}/x\n") ==
          "1:8: environment variable NOPE is not set (write ${NOPE:-default} to give a default)");
    CHECK(failure("root = ${ROOT\n") == "1:8: unclosed ${: write ${NAME} or ${NAME:-default}");
    CHECK(failure("root = ${1X}\n") ==
          "1:8: bad variable name '1X' in ${...}: letters, digits and _");
    CHECK(failure("body = \"open\n") == "1:8: unclosed quote: a value ends with '\"'");
    CHECK(failure("body = \"a\" b\n") == "1:12: unexpected text after the closing quote");
    CHECK(failure("body = \"a\\qb\"\n") ==
          "1:10: unknown escape '\\q': use \\\" \\\\ \\n \\t or \\$");
}
