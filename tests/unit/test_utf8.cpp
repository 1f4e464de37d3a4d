// The incremental UTF-8 validator: the cases Autobahn's 6.x tests send
// (boundaries, overlongs, surrogates, past U+10FFFF, truncations), written
// from Unicode's Table 3-7; each fed whole, byte by byte and split at every
// point gives the same answer and fails at the same byte. Exhaustively, it
// agrees with a decoder written from the definition.

#include "http/websocket/utf8.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace weft::http::websocket;
using namespace std::string_view_literals;

namespace {

std::span<const std::uint8_t> bytes(std::string_view text) {
    return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

// The index of the byte at which validation fails, fed one byte at a time;
// nullopt if none does.
std::optional<std::size_t> failing_byte(std::string_view text) {
    Utf8Validator validator;
    for (std::size_t i = 0; i < text.size(); ++i)
        if (!validator.feed(bytes(text.substr(i, 1)))) return i;
    return std::nullopt;
}

enum class Verdict { valid, incomplete, invalid };

Verdict verdict(std::string_view text) {
    Utf8Validator whole;
    const bool ok = whole.feed(bytes(text));
    const Verdict result = !ok                ? Verdict::invalid
                           : whole.complete() ? Verdict::valid
                                              : Verdict::incomplete;
    // The same at every split into two feeds.
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
        Utf8Validator split;
        const bool first = split.feed(bytes(text.substr(0, cut)));
        const bool second = first && split.feed(bytes(text.substr(cut)));
        INFO("cut at " << cut);
        CHECK(second == ok);
        CHECK(split.failed() == !ok);
        if (ok) CHECK(split.complete() == whole.complete());
    }
    CHECK(failing_byte(text).has_value() == !ok);
    return result;
}

// A decoder written from the definition (RFC 3629 §3), to compare with.
bool reference_valid(const std::vector<std::uint8_t>& text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const std::uint8_t lead = text[i];
        std::size_t length;
        std::uint32_t code;
        if (lead < 0x80)
            length = 1, code = lead;
        else if ((lead & 0xE0) == 0xC0)
            length = 2, code = lead & 0x1F;
        else if ((lead & 0xF0) == 0xE0)
            length = 3, code = lead & 0x0F;
        else if ((lead & 0xF8) == 0xF0)
            length = 4, code = lead & 0x07;
        else
            return false;
        if (i + length > text.size()) return false;
        for (std::size_t k = 1; k < length; ++k) {
            if ((text[i + k] & 0xC0) != 0x80) return false;
            code = code << 6 | (text[i + k] & 0x3F);
        }
        static constexpr std::uint32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
        if (code < kShortest[length] || code > 0x10FFFF) return false;
        if (code >= 0xD800 && code <= 0xDFFF) return false;
        i += length;
    }
    return true;
}

bool valid(const std::vector<std::uint8_t>& text) {
    Utf8Validator validator;
    return validator.feed(text) && validator.complete();
}

} // namespace

TEST_CASE("utf8/valid text, boundaries of each length and the last code points", "[http]") {
    for (std::string_view text : {
             ""sv,
             "Hello-µ@ßöäüàá-UTF-8!!"sv,
             "\xCE\xBA\xE1\xBD\xB9\xCF\x83\xCE\xBC\xCE\xB5"sv, // κόσμε
             "\x00"sv,                                         // U+0000
             "\x7F"sv,                                         // U+007F
             "\xC2\x80"sv,                                     // U+0080
             "\xDF\xBF"sv,                                     // U+07FF
             "\xE0\xA0\x80"sv,                                 // U+0800
             "\xED\x9F\xBF"sv,                                 // U+D7FF, below the surrogates
             "\xEE\x80\x80"sv,                                 // U+E000, above them
             "\xEF\xBF\xBD"sv,                                 // U+FFFD
             "\xEF\xBF\xBE\xEF\xBF\xBF"sv, // U+FFFE, U+FFFF: noncharacters, valid
             "\xF0\x90\x80\x80"sv,         // U+10000
             "\xF4\x8F\xBF\xBF"sv,         // U+10FFFF
             "\xF0\x9F\x98\x80 plain ASCII long enough for the word loop \xE2\x82\xAC"sv,
         }) {
        INFO(std::string(text));
        CHECK(verdict(text) == Verdict::valid);
    }
}

TEST_CASE("utf8/invalid bytes fail at the byte that makes them so", "[http]") {
    struct Case {
        std::string_view text;
        std::size_t fails_at;
    };
    for (const Case& c : {
             Case{"\x80"sv, 0},                     // a lone continuation byte
             Case{"\xBF"sv, 0},                     //
             Case{"ab\x80\xBF"sv, 2},               //
             Case{"\xC0\x80"sv, 0},                 // overlong U+0000 (C0 never appears)
             Case{"\xC1\xBF"sv, 0},                 // overlong U+007F
             Case{"\xE0\x80\x80"sv, 1},             // overlong U+0000 in three
             Case{"\xE0\x9F\xBF"sv, 1},             // overlong U+07FF
             Case{"\xF0\x80\x80\x80"sv, 1},         // overlong in four
             Case{"\xF0\x8F\xBF\xBF"sv, 1},         // overlong U+FFFF
             Case{"\xED\xA0\x80"sv, 1},             // U+D800
             Case{"\xED\xBF\xBF"sv, 1},             // U+DFFF
             Case{"\xED\xA0\x80\xED\xB0\x80"sv, 1}, // a surrogate pair, as CESU-8
             Case{"\xF4\x90\x80\x80"sv, 1},         // U+110000
             Case{"\xF5\x80\x80\x80"sv, 0},         // past U+10FFFF
             Case{"\xF7\xBF\xBF\xBF"sv, 0},         // U+1FFFFF
             Case{"\xF8\x88\x80\x80\x80"sv, 0},     // five bytes
             Case{"\xFC\x84\x80\x80\x80\x80"sv, 0}, // six
             Case{"\xFE"sv, 0},                     //
             Case{"\xFF"sv, 0},                     //
             Case{"\xC2\x41"sv, 1},                 // a lead byte cut by ASCII
             Case{"\xE1\x80\x41"sv, 2},             //
             Case{"\xF1\x80\x80\xC2\x80"sv, 3},     // cut by another lead
             Case{"\xCE\xBA\xE1\xBD\xB9\xCF\x83\xCE\xBC\xCE\xB5\xED\xA0\x80"
                  "edited"sv,
                  12},
         }) {
        INFO(std::string(c.text));
        CHECK(verdict(c.text) == Verdict::invalid);
        CHECK(failing_byte(c.text) == c.fails_at);
    }
}

TEST_CASE("utf8/text ending inside a character is incomplete, not invalid", "[http]") {
    for (std::string_view text :
         {"\xC2"sv, "\xE0\xA0"sv, "\xE1"sv, "\xF0\x90\x80"sv, "\xF4\x8F"sv, "\xCE\xBA\xE1\xBD"sv}) {
        INFO(std::string(text));
        CHECK(verdict(text) == Verdict::incomplete);
    }
}

TEST_CASE("utf8/a rejection stays until reset", "[http]") {
    Utf8Validator validator;
    CHECK_FALSE(validator.feed(bytes("\xFF")));
    CHECK_FALSE(validator.feed(bytes("a")));
    CHECK(validator.failed());
    validator.reset();
    CHECK(validator.feed(bytes("a")));
    CHECK(validator.complete());
}

TEST_CASE("utf8/agrees with a decoder from the definition on every short sequence", "[http]") {
    std::vector<std::uint8_t> text(2);
    for (unsigned a = 0; a < 256; ++a)
        for (unsigned b = 0; b < 256; ++b) {
            text = {static_cast<std::uint8_t>(a), static_cast<std::uint8_t>(b)};
            REQUIRE(valid(text) == reference_valid(text));
        }
    // Three bytes from every lead byte past ASCII; four from the four-byte
    // leads, the last byte on each side of the continuation range.
    for (unsigned a = 0xC0; a < 256; ++a)
        for (unsigned b = 0; b < 256; ++b)
            for (unsigned c = 0; c < 256; ++c) {
                text = {static_cast<std::uint8_t>(a), static_cast<std::uint8_t>(b),
                        static_cast<std::uint8_t>(c)};
                REQUIRE(valid(text) == reference_valid(text));
            }
    for (unsigned a = 0xF0; a < 0xF8; ++a)
        for (unsigned b = 0x70; b < 0xD0; ++b)
            for (unsigned c = 0x70; c < 0xD0; ++c)
                for (unsigned d : {0x7F, 0x80, 0xBF, 0xC0}) {
                    text = {static_cast<std::uint8_t>(a), static_cast<std::uint8_t>(b),
                            static_cast<std::uint8_t>(c), static_cast<std::uint8_t>(d)};
                    REQUIRE(valid(text) == reference_valid(text));
                }
}
