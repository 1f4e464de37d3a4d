// The WebSocket opening handshake's pure parts: RFC 6455's example key and
// accept value, which keys are valid, base64 against RFC 4648's vectors, and
// the subprotocol the configuration's order picks.

#include "http/websocket/handshake.hpp"
#include "util/base64.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

using namespace weft::http::websocket;
using namespace std::string_view_literals;

namespace {

std::string encode(std::string_view text) {
    std::string out(weft::base64::encoded_size(text.size()), '?');
    CHECK(weft::base64::encode(text, out.data()) == out.size());
    CHECK(weft::base64::encode(text) == out);
    return out;
}

std::string accept(std::string_view key) {
    const AcceptValue value = accept_value(key);
    return std::string(value.data(), value.size());
}

std::string_view pick(std::vector<std::string_view> offered,
                      const std::vector<std::string>& configured) {
    return select_subprotocol(offered, configured);
}

} // namespace

TEST_CASE("websocket handshake/the RFC's example key gets the RFC's accept value", "[http]") {
    // RFC 6455 §1.3 and §4.2.2.
    CHECK(valid_key("dGhlIHNhbXBsZSBub25jZQ=="));
    CHECK(accept("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    // Two more, checked with Python's hashlib and base64.
    CHECK(valid_key("x3JJHMbDL1EzLkh9GBhXDw=="));
    CHECK(accept("x3JJHMbDL1EzLkh9GBhXDw==") == "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
    CHECK(accept("E4WSEcseoWr4csPLS2QJHA==") == "7eQChgCtQMnVILefJAO6dK5JwPc=");
}

TEST_CASE("websocket handshake/a key is the base64 of 16 bytes, canonically", "[http]") {
    CHECK(valid_key("AAAAAAAAAAAAAAAAAAAAAA=="));
    CHECK(valid_key("/////////////////////w=="));
    CHECK(valid_key("++++++++++++++++++++/Q=="));
    for (std::string_view key : {
             ""sv,
             "dGhlIHNhbXBsZSBub25jZQ="sv,    // 23 characters
             "dGhlIHNhbXBsZSBub25jZQ==="sv,  // 25
             "dGhlIHNhbXBsZSBub25jZ==="sv,   // 15 bytes and a half
             "dGhlIHNhbXBsZSBub25jZQAA"sv,   // 18 bytes, unpadded
             "dGhlIHNhbXBsZSBub25jZR=="sv,   // bits set past the 16 bytes
             "dGhlIHNhbXBsZSBub25jZB=="sv,   //
             "dGhlIHNhbXBsZSBub25j-Q=="sv,   // base64url is not base64
             "dGhlIHNhbXBsZSBub25j_Q=="sv,   //
             " dGhlIHNhbXBsZSBub25jZQ=="sv,  // the parser trims the field value
             "dGhlIHNhbXBsZSBub25jZQ==\r"sv, //
             "dGhlIHNhbXBsZ SBub25jZQ=="sv,
         }) {
        INFO(std::string(key));
        CHECK_FALSE(valid_key(key));
    }
}

TEST_CASE("websocket handshake/base64 encodes RFC 4648's test vectors", "[http]") {
    CHECK(encode("") == "");
    CHECK(encode("f") == "Zg==");
    CHECK(encode("fo") == "Zm8=");
    CHECK(encode("foo") == "Zm9v");
    CHECK(encode("foob") == "Zm9vYg==");
    CHECK(encode("fooba") == "Zm9vYmE=");
    CHECK(encode("foobar") == "Zm9vYmFy");
    CHECK(encode("\xFB\xFF\xBF") == "+/+/");
    CHECK(encode("the sample nonce") == "dGhlIHNhbXBsZSBub25jZQ==");
}

TEST_CASE("websocket handshake/the first configured subprotocol the client offers wins", "[http]") {
    const std::vector<std::string> configured = {"chat.v2", "chat", "mqtt"};
    // The configuration's order, not the client's.
    CHECK(pick({"chat, chat.v2"}, configured) == "chat.v2");
    CHECK(pick({"mqtt,chat"}, configured) == "chat");
    CHECK(pick({"  mqtt \t"}, configured) == "mqtt");
    // Several header lines count as one list.
    CHECK(pick({"soap", "wamp, mqtt"}, configured) == "mqtt");
    CHECK(pick({"soap", "chat"}, configured) == "chat");
    // Names are compared exactly: no prefixes, no case folding.
    CHECK(pick({"Chat, chat.v, chat.v22"}, configured).empty());
    CHECK(pick({""}, configured).empty());
    CHECK(pick({",, ,"}, configured).empty());
    CHECK(pick({}, configured).empty());
    CHECK(pick({"chat"}, {}).empty());
}
