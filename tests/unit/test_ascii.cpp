// The ASCII vocabulary of protocol text, checked byte by byte against the
// RFC grammars written out here as plain lists.

#include "util/ascii.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

namespace ascii = weft::ascii;

namespace {
// Every byte value, as a char.
template <class Check>
void for_every_byte(Check check) {
    for (int b = 0; b < 256; ++b) check(static_cast<char>(b), static_cast<unsigned char>(b));
}
bool listed(std::string_view list, unsigned char u) {
    return list.find(static_cast<char>(u)) != std::string_view::npos;
}
constexpr std::string_view kLetters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
constexpr std::string_view kDigits = "0123456789";
} // namespace

TEST_CASE("whitespace is SP and HTAB only, and trim removes it at both ends", "[ascii]") {
    for_every_byte([](char c, unsigned char u) {
        INFO(int(u));
        CHECK(ascii::is_whitespace(c) == (u == ' ' || u == '\t'));
    });
    CHECK(ascii::trim_whitespace(" \t a b\t ") == "a b");
    CHECK(ascii::trim_whitespace("\r\na\r\n") == "\r\na\r\n"); // CR and LF are not OWS
    CHECK(ascii::trim_whitespace(" \t ").empty());
    CHECK(ascii::trim_whitespace("").empty());
    static_assert(ascii::trim_whitespace("  x ") == "x");
}

TEST_CASE("digits, letters and hex digits are ASCII's, never a byte above 0x7f", "[ascii]") {
    for_every_byte([](char c, unsigned char u) {
        INFO(int(u));
        CHECK(ascii::is_digit(c) == listed(kDigits, u));
        CHECK(ascii::is_alpha(c) == listed(kLetters, u));
        const std::string_view hex = "0123456789abcdef";
        const std::size_t lower_at = hex.find(static_cast<char>(u | 0x20));
        const bool is_hex = listed(kDigits, u) || (listed(kLetters, u) && lower_at != hex.npos);
        CHECK(ascii::hex_value(c) == (is_hex ? static_cast<int>(lower_at) : -1));
    });
    static_assert(ascii::hex_value('F') == 15 && ascii::hex_value('g') == -1);
}

TEST_CASE("case maps only ASCII letters", "[ascii]") {
    for_every_byte([](char c, unsigned char u) {
        INFO(int(u));
        const bool upper = u >= 'A' && u <= 'Z', lower = u >= 'a' && u <= 'z';
        CHECK(ascii::to_lower(c) == (upper ? static_cast<char>(u + 32) : c));
        CHECK(ascii::to_upper(c) == (lower ? static_cast<char>(u - 32) : c));
    });
}

TEST_CASE("case-insensitive comparison ignores ASCII case and nothing else", "[ascii]") {
    CHECK(ascii::equals_ignoring_case("Content-Length", "content-LENGTH"));
    CHECK(ascii::equals_ignoring_case("", ""));
    CHECK_FALSE(ascii::equals_ignoring_case("host", "hosts"));
    CHECK_FALSE(ascii::equals_ignoring_case("host", "hist"));
    // '@' | 0x20 is '`', '[' | 0x20 is '{': neither pair is a case pair.
    CHECK_FALSE(ascii::equals_ignoring_case("@", "`"));
    CHECK_FALSE(ascii::equals_ignoring_case("[", "{"));
    CHECK_FALSE(ascii::equals_ignoring_case("\xc4", "\xe4")); // Latin-1 Ä, ä: not ASCII
    CHECK(ascii::starts_with_ignoring_case("HTTP://host/", "http://"));
    CHECK(ascii::starts_with_ignoring_case("x", ""));
    CHECK_FALSE(ascii::starts_with_ignoring_case("http:", "http://"));
}

TEST_CASE("tchar is RFC 9110's token set, byte for byte", "[ascii]") {
    const std::string tchar = std::string(kLetters) + std::string(kDigits) + "!#$%&'*+-.^_`|~";
    for_every_byte([&](char c, unsigned char u) {
        INFO(int(u));
        CHECK(ascii::is_tchar(c) == listed(tchar, u));
    });
    CHECK(ascii::kTchar.contains_all("X-Forwarded-For"));
    CHECK(ascii::kTchar.contains_all(""));
    CHECK_FALSE(ascii::kTchar.contains_all("a b"));
    CHECK_FALSE(ascii::kTchar.contains_all("a:b"));
}

TEST_CASE("a byte set holds letters, digits and the extra bytes asked for", "[ascii]") {
    constexpr auto set = ascii::ByteSet::alphanumeric_and("-.:");
    for_every_byte([&](char c, unsigned char u) {
        INFO(int(u));
        CHECK(set.contains(c) == (listed(kLetters, u) || listed(kDigits, u) || listed("-.:", u)));
    });
    static_assert(set.contains_all("example.org:80") && !set.contains_all("a/b"));
}

TEST_CASE("a field value holds every byte but controls other than HTAB, and DEL", "[ascii]") {
    for_every_byte([](char c, unsigned char u) {
        INFO(int(u));
        const bool control = u < 0x20 || u == 0x7f;
        CHECK(ascii::is_field_value_char(c) == (!control || u == '\t'));
    });
}

TEST_CASE("CGI spells a field name's bytes upper case, '-' as '_', every other byte as it is",
          "[ascii]") {
    constexpr std::string_view kLower = "abcdefghijklmnopqrstuvwxyz";
    for_every_byte([&](char c, unsigned char u) {
        INFO(int(u));
        const char expected = u == '-'            ? '_'
                              : listed(kLower, u) ? static_cast<char>(u - 'a' + 'A')
                                                  : c;
        CHECK(ascii::kCgiNameByte[u] == expected);
    });
    char out[16] = {};
    ascii::put_cgi_name(out, "x-Forwarded-4\xe9", 14);
    CHECK(std::string_view(out, 14) == "X_FORWARDED_4\xe9");
}
