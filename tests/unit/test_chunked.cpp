// The chunked decoder: each sample decoded whole, byte by byte, at every
// split point and at every pair of split points must give the same payload,
// the same end and the same count of consumed bytes.

#include "http/chunked.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace weft::http;
using namespace std::string_view_literals;
using Status = ChunkedDecoder::Status;

namespace {

struct Decoded {
    Status status = Status::incomplete; // done, error, or incomplete if the input ran out
    std::string payload;
    std::size_t consumed = 0; // in total, up to the end of the body
    std::uint64_t decoded = 0;

    bool operator==(const Decoded&) const = default;
};

// Feeds `encoded` in pieces cut at `cuts` (ascending), as a connection does:
// each piece arrives, next() runs until it wants more; unconsumed bytes stay
// in front of the next piece.
Decoded decode(std::string_view encoded, const std::vector<std::size_t>& cuts) {
    ChunkedDecoder decoder;
    Decoded out;
    std::string pending;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : encoded.size();
        pending += encoded.substr(from, to - from);
        from = to;
        std::string_view input = pending;
        for (;;) {
            const ChunkedDecoder::Step step = decoder.next(input);
            REQUIRE(step.consumed <= input.size());
            out.consumed += step.consumed;
            if (step.status == Status::data) {
                REQUIRE_FALSE(step.data.empty());
                REQUIRE(step.data.data() >= input.data());
                REQUIRE(step.data.data() + step.data.size() == input.data() + step.consumed);
                out.payload += step.data;
                input.remove_prefix(step.consumed);
                continue;
            }
            if (step.status == Status::incomplete) REQUIRE(step.consumed == input.size());
            if (step.status != Status::incomplete) {
                out.status = step.status;
                if (step.status == Status::error) out.consumed = 0; // not specified
                out.decoded = decoder.decoded();
                return out;
            }
            input.remove_prefix(step.consumed);
            break;
        }
        pending = std::string(input);
    }
    out.decoded = decoder.decoded();
    return out;
}

// Decodes whole, byte by byte, split once everywhere and (for short samples)
// twice everywhere; all must agree. The whole run's result is returned.
Decoded decode_every_way(std::string_view encoded) {
    const Decoded whole = decode(encoded, {});
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < encoded.size(); ++i) every.push_back(i);
    CHECK(decode(encoded, every) == whole);
    for (std::size_t i = 0; i <= encoded.size(); ++i) {
        if (decode(encoded, {i}) != whole) FAIL_CHECK("split at " << i);
    }
    if (encoded.size() <= 80)
        for (std::size_t i = 0; i <= encoded.size(); ++i)
            for (std::size_t j = i; j <= encoded.size(); ++j)
                if (decode(encoded, {i, j}) != whole) FAIL_CHECK("split at " << i << ", " << j);
    return whole;
}

void check_body(std::string_view encoded, std::string_view payload, std::size_t body_size) {
    INFO(encoded);
    const Decoded result = decode_every_way(encoded);
    CHECK(result.status == Status::done);
    CHECK(result.payload == payload);
    CHECK(result.consumed == body_size);
    CHECK(result.decoded == payload.size());
}

Status outcome(std::string_view encoded) {
    INFO(encoded);
    return decode_every_way(encoded).status;
}

} // namespace

TEST_CASE("chunked bodies decode alike however the input is split", "[http]") {
    const struct {
        std::string_view encoded, payload;
    } samples[] = {
        {"0\r\n\r\n", ""},
        {"5\r\nhello\r\n0\r\n\r\n", "hello"},
        {"3\r\nabc\r\n4\r\ndefg\r\n1\r\nh\r\n0\r\n\r\n", "abcdefgh"},
        {"a\r\n0123456789\r\nA\r\nabcdefghij\r\n0\r\n\r\n", "0123456789abcdefghij"},
        {"0005\r\nhello\r\n000\r\n\r\n", "hello"},
        {"000000000000000A\r\n0123456789\r\n0\r\n\r\n", "0123456789"},
        {"7\r\n0\r\n\r\nab\r\n0\r\n\r\n", "0\r\n\r\nab"}, // framing bytes inside data
        {"5;name=value\r\nhello\r\n0;last\r\n\r\n", "hello"},
        {"5;a=\"q \\\" ; x\";b;c=d\r\nhello\r\n0\r\n\r\n", "hello"},
        {"5 ;a\r\nhello\r\n0\t; a = b \r\n\r\n", "hello"},
        {"5 \r\nhello\r\n0\r\n\r\n", "hello"},
        {"2;x=\"\xc3\xa9\"\r\nhi\r\n0\r\n\r\n", "hi"},
        {"5\r\nhello\r\n0\r\nX-Sum: abc\r\nY:\r\nZ: \t caf\xc3\xa9 \"q\"\r\n\r\n", "hello"},
        {"3\r\n\0\r\n\r\n0\r\n\r\n"sv, "\0\r\n"sv},
    };
    for (const auto& sample : samples)
        check_body(sample.encoded, sample.payload, sample.encoded.size());
}

TEST_CASE("a chunked body ends at its last CRLF: what follows is not consumed", "[http]") {
    const std::string body = "4\r\nwiki\r\n0\r\nT: v\r\n\r\n";
    check_body(body + "GET / HTTP/1.1\r\nHost: h\r\n\r\n", "wiki", body.size());
    check_body(body + "\n\n\x01", "wiki", body.size());
}

TEST_CASE("a large chunk comes out in the pieces it arrived in", "[http]") {
    const std::string data(10000, 'x');
    const std::string body = "2710\r\n" + data + "\r\n0\r\n\r\n";
    ChunkedDecoder decoder;
    ChunkedDecoder::Step step = decoder.next(std::string_view(body).substr(0, 100));
    CHECK(step.status == Status::data);
    CHECK(step.consumed == 100);
    CHECK(step.data.size() == 94);
    step = decoder.next(std::string_view(body).substr(100));
    CHECK(step.status == Status::data);
    CHECK(step.data.size() == 10000 - 94);
    CHECK(decoder.decoded() == 10000);
    step = decoder.next(std::string_view(body).substr(100 + step.consumed));
    CHECK(step.status == Status::done);
    CHECK(step.consumed == 7);
    CHECK(decode_every_way(body).payload == data);
}

TEST_CASE("chunk sizes: 1 to 16 hex digits", "[http]") {
    CHECK(outcome("\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome(";x\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome(" 5\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("g\r\n") == Status::error);
    CHECK(outcome("0x5\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("+5\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5 6\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("00000000000000005\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("10000000000000000\r\n") == Status::error);
    CHECK(outcome("FFFFFFFFFFFFFFFF\r\nabc") == Status::incomplete);
    const Decoded huge = decode("ffffffffffffffff\r\nabc", {});
    CHECK(huge.payload == "abc");
}

TEST_CASE("chunk framing: CRLF exactly, after the size and after the data", "[http]") {
    CHECK(outcome("5\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5\rhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5\r\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5\r\nhelloX\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5\r\nhello\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5\r\nhello\r0\r\n\r\n") == Status::error);
    CHECK(outcome("5\r\nhello0\r\n\r\n") == Status::error);
    CHECK(outcome("5\r\nhello\r\n0\r\n\n") == Status::error);
    CHECK(outcome("5\r\nhello\r\n0\r\n\rX") == Status::error);
    CHECK(outcome("5\r\nhello\r\n0\n\r\n") == Status::error);
    CHECK(outcome("5\r\nhello\r\n") == Status::incomplete);
    CHECK(outcome("5\r\nhello\r\n0\r\n\r") == Status::incomplete);
    // The payload before the error is still handed out.
    CHECK(decode("5\r\nhelloX", {}).payload == "hello");
}

TEST_CASE("chunk extensions: tokens, quoted strings and whitespace only", "[http]") {
    CHECK(outcome("5;a\x01\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5;a=b\x7f\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5;a=(b)\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5;a=\"b\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5;a=\"b\\\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5;a=\"b\nc\"\r\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5;a\nhello\r\n0\r\n\r\n") == Status::error);
    CHECK(outcome("5;a\rhello\r\n0\r\n\r\n") == Status::error);
}

TEST_CASE("trailer fields are checked like header fields and dropped", "[http]") {
    CHECK(outcome("0\r\nX: y\n\r\n") == Status::error);         // bare LF
    CHECK(outcome("0\r\nX: y\rZ: w\r\n\r\n") == Status::error); // bare CR
    CHECK(outcome("0\r\nX: y\r\n z\r\n\r\n") == Status::error); // obs-fold
    CHECK(outcome("0\r\n\tX: y\r\n\r\n") == Status::error);
    CHECK(outcome("0\r\nX: a\0b\r\n\r\n"sv) == Status::error);
    CHECK(outcome("0\r\nX: a\x01\r\n\r\n") == Status::error);
    CHECK(outcome("0\r\nX: a\x7f\r\n\r\n") == Status::error);
    CHECK(outcome("0\r\nX : y\r\n\r\n") == Status::error);
    CHECK(outcome("0\r\nX\r\n\r\n") == Status::error);
    CHECK(outcome("0\r\n: y\r\n\r\n") == Status::error);
    CHECK(outcome("0\r\nX(y): z\r\n\r\n") == Status::error);
}

TEST_CASE("lines longer than kMaxLine are errors, and the trailer section is bounded", "[http]") {
    const std::size_t max = ChunkedDecoder::kMaxLine;
    const std::string ext = "5;" + std::string(max - 2, 'e');
    CHECK(decode(ext + "\r\nhello\r\n0\r\n\r\n", {}).status == Status::done);
    CHECK(decode(ext + "e\r\nhello\r\n0\r\n\r\n", {}).status == Status::error);
    const std::string field = "X: " + std::string(max - 3, 'v');
    CHECK(decode("0\r\n" + field + "\r\n\r\n", {}).status == Status::done);
    CHECK(decode("0\r\n" + field + "v\r\n\r\n", {}).status == Status::error);
    // A line too long is refused before its end arrives.
    ChunkedDecoder decoder;
    CHECK(decoder.next(ext + "e").status == Status::error);

    std::string many = "0\r\n";
    for (int i = 0; i < 5; ++i) many += "X: " + std::string(1000, 'v') + "\r\n";
    CHECK(decode(many + "\r\n", {}).status == Status::done);
    for (int i = 0; i < 20; ++i) many += "X: " + std::string(1000, 'v') + "\r\n";
    CHECK(decode(many + "\r\n", {}).status == Status::error);
}

TEST_CASE("done and error are sticky until reset()", "[http]") {
    ChunkedDecoder decoder;
    const std::string body = "1\r\na\r\n0\r\n\r\n";
    ChunkedDecoder::Step step = decoder.next(body);
    REQUIRE(step.status == Status::data);
    step = decoder.next(std::string_view(body).substr(step.consumed));
    REQUIRE(step.status == Status::done);
    CHECK(decoder.next("1\r\nb\r\n").status == Status::done);
    CHECK(decoder.next("1\r\nb\r\n").consumed == 0);
    CHECK(decoder.decoded() == 1);

    decoder.reset();
    CHECK(decoder.decoded() == 0);
    CHECK(decoder.next("x").status == Status::error);
    CHECK(decoder.next("1\r\nb\r\n").status == Status::error);
    decoder.reset();
    step = decoder.next("1\r\nb\r\n");
    CHECK(step.status == Status::data);
    CHECK(step.data == "b");
    CHECK(decoder.next("").status == Status::incomplete);
}
