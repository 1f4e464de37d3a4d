// Base64 (RFC 4648): the test vectors of §10 both ways, and strict
// decoding: every text that is not canonical padded base64 is refused.

#include "util/base64.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <string_view>

using namespace weft;

namespace {

std::optional<std::string> decoded(std::string_view text) {
    std::string out(base64::decoded_size_max(text.size()), '\0');
    const std::optional<std::size_t> size = base64::decode(text, out.data(), out.size());
    if (!size) return std::nullopt;
    out.resize(*size);
    return out;
}

} // namespace

TEST_CASE("base64 encodes and decodes RFC 4648's test vectors", "[base64]") {
    const std::pair<std::string_view, std::string_view> vectors[] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    for (const auto& [bytes, text] : vectors) {
        INFO(bytes);
        CHECK(base64::encode(bytes) == text);
        CHECK(decoded(text) == std::string(bytes));
    }
}

TEST_CASE("base64 round-trips every byte value, '+' and '/' included", "[base64]") {
    std::string bytes;
    for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
    for (std::size_t size = 0; size <= bytes.size(); size += 37) {
        const std::string text = base64::encode(bytes.substr(0, size));
        CHECK(text.size() == base64::encoded_size(size));
        CHECK(decoded(text) == bytes.substr(0, size));
    }
    CHECK(base64::encode("\xfb\xff") == "+/8=");
}

TEST_CASE("base64 decoding refuses what is not strict base64", "[base64]") {
    for (std::string_view bad : {
             "Zg",       // no padding
             "Zg=",      // short padding
             "Zm9vY",    // length not a multiple of 4
             "Zh==",     // bits past the last byte not zero
             "Zm9=",     // the same with one '='
             "Z===",     // three '='
             "====",     //
             "Zg==Zg==", // padding inside
             "Zm 9v",    // a space
             "Zm9v\n",   // a line end
             "Zm-v",     // base64url's alphabet
             "Zm_v",     //
             "Zm9v====", //
             "Zm\0v",    // a NUL (the view's length counts it)
         }) {
        INFO(bad);
        CHECK_FALSE(decoded(bad));
    }
    CHECK_FALSE(decoded(std::string_view("Zm\0v", 4)));
}

TEST_CASE("base64 decoding refuses text that does not fit the room given", "[base64]") {
    char out[5];
    CHECK_FALSE(base64::decode("Zm9vYmFy", out, sizeof out));
    CHECK(base64::decode("Zm9vYg==", out, sizeof out) == 4u);
}
