#pragma once
// The bytes of protocol text: whitespace, digits, tokens, field values and
// ASCII case, the way HTTP, CGI heads and the configuration spell them. Only
// ASCII counts: no locale, and a byte of 0x80 or above is never a letter.

#include <array>
#include <cstddef>
#include <string_view>

namespace weft::ascii {

// SP or HTAB: optional whitespace around field values, list elements and
// parameters (RFC 9110 §5.6.3).
constexpr bool is_whitespace(char c) {
    return c == ' ' || c == '\t';
}

// `text` without optional whitespace at either end.
constexpr std::string_view trim_whitespace(std::string_view text) {
    while (!text.empty() && is_whitespace(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_whitespace(text.back())) text.remove_suffix(1);
    return text;
}

constexpr bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

constexpr bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The value of a hex digit in either case, or -1.
constexpr int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

constexpr char to_lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

constexpr char to_upper(char c) {
    return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

// A field name's byte as CGI spells it in HTTP_* (RFC 3875 §4.1.18):
// upper case, '-' as '_'; one load a byte instead of two compares.
inline constexpr std::array<char, 256> kCgiNameByte = [] {
    std::array<char, 256> map{};
    for (int c = 0; c < 256; ++c) map[c] = c == '-' ? '_' : to_upper(static_cast<char>(c));
    return map;
}();

// `n` bytes of a field name at `in` as CGI spells them, at `out`.
inline void put_cgi_name(char* out, const char* in, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = kCgiNameByte[static_cast<unsigned char>(in[i])];
}

// Equality ignoring ASCII case, for field names, tokens and extensions. Out
// of line: inlined where it is seldom called, its loop cost Router::route 6
// instructions a request in spilled registers (callgrind, bench/http.sh).
bool equals_ignoring_case(std::string_view a, std::string_view b);
bool starts_with_ignoring_case(std::string_view text, std::string_view prefix);

// A set of bytes as a 256-entry table: one load tells whether a byte is in it.
class ByteSet {
public:
    // Letters, digits and the bytes of `extra`.
    static constexpr ByteSet alphanumeric_and(std::string_view extra) {
        ByteSet set;
        for (int c = 0; c < 256; ++c)
            set.has_[c] = is_alpha(static_cast<char>(c)) || is_digit(static_cast<char>(c));
        for (char c : extra) set.has_[static_cast<unsigned char>(c)] = true;
        return set;
    }

    constexpr bool contains(char c) const { return has_[static_cast<unsigned char>(c)]; }
    constexpr bool contains_all(std::string_view text) const {
        for (char c : text)
            if (!contains(c)) return false;
        return true;
    }

private:
    std::array<bool, 256> has_{};
};

// tchar (RFC 9110 §5.6.2): method names, field names, tokens.
inline constexpr ByteSet kTchar = ByteSet::alphanumeric_and("!#$%&'*+-.^_`|~");

constexpr bool is_tchar(char c) {
    return kTchar.contains(c);
}

// What a field value may hold (RFC 9110 §5.5): field-vchar, obs-text, SP and
// HTAB; no other control character and no DEL.
constexpr bool is_field_value_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return c == '\t' || (u >= 0x20 && u != 0x7f);
}

} // namespace weft::ascii
