// WebSocket frames: RFC 6455 §5.7's examples byte for byte, each protocol
// error with its close code and at the byte that shows it, the message
// assembler's limits, and a stream of many frames read whole, at every split
// point and at every pair of split points with the same result. Reading
// allocates nothing.

// g++ 12 at -O2 (the aarch64 preset) warns falsely about the counting
// operator delete it inlines here (allocation_count.hpp), and about
// std::vector's copies into a vector of one byte (-Warray-bounds,
// -Wstringop-overread): client_frame() appends byte by byte.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include "http/websocket/frame_reader.hpp"
#include "http/websocket/frame_writer.hpp"
#include "http/websocket/message_assembler.hpp"

#include "allocation_count.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace weft::http::websocket;
using namespace std::string_view_literals;
using namespace std::string_literals;
using Bytes = std::vector<std::uint8_t>;
using Event = FrameReader::Event;

namespace {

constexpr std::uint8_t kFin = 0x80;
constexpr std::array<std::uint8_t, 4> kRfcMask = {0x37, 0xfa, 0x21, 0x3d};

std::uint8_t op(Opcode opcode) {
    return static_cast<std::uint8_t>(opcode);
}

// A client's frame: `first` is FIN, RSV and the opcode; the length in its
// shortest form; the payload masked with `mask`.
Bytes client_frame(std::uint8_t first, std::string_view payload,
                   std::array<std::uint8_t, 4> mask = kRfcMask) {
    Bytes out;
    out.reserve(14 + payload.size());
    out.push_back(first);
    const std::uint64_t n = payload.size();
    if (n < 126) {
        out.push_back(static_cast<std::uint8_t>(0x80 | n));
    } else if (n <= 0xFFFF) {
        out.push_back(0x80 | 126);
        out.push_back(static_cast<std::uint8_t>(n >> 8));
        out.push_back(static_cast<std::uint8_t>(n));
    } else {
        out.push_back(0x80 | 127);
        for (int shift = 56; shift >= 0; shift -= 8)
            out.push_back(static_cast<std::uint8_t>(n >> shift));
    }
    for (const std::uint8_t byte : mask) out.push_back(byte);
    for (std::size_t i = 0; i < payload.size(); ++i)
        out.push_back(static_cast<std::uint8_t>(payload[i]) ^ mask[i % 4]);
    return out;
}

Bytes operator+(Bytes a, const Bytes& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::string text_of(std::span<const std::uint8_t> bytes) {
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string close_payload(std::uint16_t code, std::string_view reason = {}) {
    std::string out;
    out += static_cast<char>(code >> 8);
    out += static_cast<char>(code & 0xFF);
    out += reason;
    return out;
}

// What a stream reads as: each message, control frame and failure in order;
// a failure of the reader with the stream's bytes consumed up to it.
struct Transcript {
    std::vector<std::string> events;
    bool operator==(const Transcript&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Transcript& transcript) {
    for (const std::string& event : transcript.events) out << "[" << event << "] ";
    return out;
}

// Reads `stream` in pieces cut at `cuts` (ascending), each piece passed to
// next() until it has all been consumed, messages assembled up to
// `max_message`; stops at the first failure.
Transcript read(Bytes stream, const std::vector<std::size_t>& cuts,
                std::size_t max_message = 1 << 17) {
    Transcript transcript;
    FrameReader reader;
    std::vector<std::uint8_t> storage(max_message);
    MessageAssembler assembler(storage);
    std::size_t total = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t end = i < cuts.size() ? cuts[i] : stream.size();
        std::span<std::uint8_t> piece(stream.data() + start, end - start);
        start = end;
        while (!piece.empty()) {
            const FrameReader::Step step = reader.next(piece);
            REQUIRE(step.consumed <= piece.size());
            total += step.consumed;
            piece = piece.subspan(step.consumed);
            switch (step.event) {
            case Event::need_more:
                REQUIRE(piece.empty());
                break;
            case Event::data: {
                REQUIRE(step.consumed > 0);
                const MessageStatus status = assembler.add(step);
                if (status == MessageStatus::fail) {
                    transcript.events.push_back(
                        "fail " + std::to_string(static_cast<int>(assembler.error())));
                    return transcript;
                }
                if (status == MessageStatus::complete)
                    transcript.events.push_back(
                        (assembler.opcode() == Opcode::text ? "text " : "binary ") +
                        text_of(assembler.message()));
                break;
            }
            case Event::control:
                REQUIRE(step.consumed > 0);
                transcript.events.push_back((step.opcode == Opcode::close  ? "close "
                                             : step.opcode == Opcode::ping ? "ping "
                                                                           : "pong ") +
                                            text_of(step.payload));
                break;
            case Event::fail:
                transcript.events.push_back("fail " + std::to_string(static_cast<int>(step.error)) +
                                            " after " + std::to_string(total));
                return transcript;
            }
        }
    }
    return transcript;
}

Transcript read(const Bytes& stream) {
    return read(stream, {});
}

// The last event of a transcript; empty if there is none.
std::string last(const Transcript& transcript) {
    return transcript.events.empty() ? std::string() : transcript.events.back();
}

// The close code a stream fails with, read whole; 0 if it does not.
int failure(const Bytes& stream, std::size_t max_message = 1 << 17) {
    const Transcript transcript = read(stream, {}, max_message);
    if (transcript.events.empty()) return 0;
    const std::string& last = transcript.events.back();
    return last.starts_with("fail ") ? std::stoi(last.substr(5)) : 0;
}

} // namespace

TEST_CASE("websocket frames/RFC 6455 5.7: a masked text frame reads as Hello", "[http]") {
    const Bytes hello = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
    CHECK(client_frame(kFin | op(Opcode::text), "Hello") == hello);
    FrameReader reader;
    Bytes input = hello;
    const FrameReader::Step step = reader.next(input);
    CHECK(step.event == Event::data);
    CHECK(step.consumed == hello.size());
    CHECK(step.opcode == Opcode::text);
    CHECK(step.message_start);
    CHECK(step.message_end);
    CHECK(step.frame_remaining == 0);
    CHECK(text_of(step.payload) == "Hello");
    CHECK(step.payload.data() == input.data() + 6); // unmasked in place
    CHECK_FALSE(reader.in_message());
}

TEST_CASE("websocket frames/RFC 6455 5.7: a masked pong, and Hel + lo in two fragments", "[http]") {
    const Bytes pong = {0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
    CHECK(read(pong).events == std::vector<std::string>{"pong Hello"});
    const Bytes fragments =
        client_frame(op(Opcode::text), "Hel") + client_frame(kFin | op(Opcode::continuation), "lo");
    CHECK(read(fragments).events == std::vector<std::string>{"text Hello"});

    FrameReader reader;
    Bytes input = fragments;
    std::span<std::uint8_t> left(input);
    FrameReader::Step step = reader.next(left);
    CHECK((step.event == Event::data && text_of(step.payload) == "Hel" && step.message_start &&
           !step.message_end && step.opcode == Opcode::text));
    CHECK(reader.in_message());
    left = left.subspan(step.consumed);
    step = reader.next(left);
    CHECK((step.event == Event::data && text_of(step.payload) == "lo" && !step.message_start &&
           step.message_end && step.opcode == Opcode::text));
    CHECK(step.consumed == left.size());
}

TEST_CASE("websocket frames/RFC 6455 5.7: the server's frames byte for byte", "[http]") {
    std::uint8_t out[kMaxServerHeader + 16];
    auto frame = [&](Opcode opcode, std::string_view payload, bool fin = true) {
        std::size_t n = write_frame_header(out, opcode, payload.size(), fin);
        std::memcpy(out + n, payload.data(), payload.size());
        return Bytes(out, out + n + payload.size());
    };
    CHECK(frame(Opcode::text, "Hello") == Bytes{0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f});
    CHECK(frame(Opcode::text, "Hel", false) == Bytes{0x01, 0x03, 0x48, 0x65, 0x6c});
    CHECK(frame(Opcode::continuation, "lo") == Bytes{0x80, 0x02, 0x6c, 0x6f});
    CHECK(frame(Opcode::ping, "Hello") == Bytes{0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f});
    CHECK(frame(Opcode::pong, "Hello") == Bytes{0x8a, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f});
    // 256 bytes of binary: a 16-bit length; 64 KiB: a 64-bit one.
    CHECK(write_frame_header(out, Opcode::binary, 256) == 4);
    CHECK(Bytes(out, out + 4) == Bytes{0x82, 0x7E, 0x01, 0x00});
    CHECK(write_frame_header(out, Opcode::binary, 65536) == 10);
    CHECK(Bytes(out, out + 10) == Bytes{0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0});
    // The edges of each form.
    CHECK(write_frame_header(out, Opcode::binary, 125) == 2);
    CHECK(write_frame_header(out, Opcode::binary, 126) == 4);
    CHECK(write_frame_header(out, Opcode::binary, 65535) == 4);
    CHECK(Bytes(out, out + 4) == Bytes{0x82, 0x7E, 0xFF, 0xFF});
}

TEST_CASE("websocket frames/256-byte and 64 KiB binary frames read back, whole and byte by byte",
          "[http]") {
    for (std::size_t size : {125, 126, 256, 65535, 65536, 70000}) {
        std::string payload(size, '\0');
        for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<char>(i * 7 + i / 256);
        const Bytes frame = client_frame(kFin | op(Opcode::binary), payload, {1, 2, 3, 250});
        if (size == 256)
            CHECK(Bytes(frame.begin(), frame.begin() + 4) == Bytes{0x82, 0xFE, 0x01, 0x00});
        if (size == 65536)
            CHECK(Bytes(frame.begin(), frame.begin() + 10) ==
                  Bytes{0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0});
        INFO(size);
        CHECK(read(frame).events == std::vector<std::string>{"binary " + payload});
        std::vector<std::size_t> every_byte(frame.size() - 1);
        for (std::size_t i = 0; i < every_byte.size(); ++i) every_byte[i] = i + 1;
        CHECK(read(frame, every_byte).events == std::vector<std::string>{"binary " + payload});
    }
}

TEST_CASE("websocket frames/each protocol error fails with its close code, at its byte", "[http]") {
    struct Case {
        const char* what;
        Bytes stream;
        int code;
        std::size_t consumed; // of the stream, when the reader failed
    };
    const Bytes text = client_frame(op(Opcode::text), "Hel");
    const Bytes ping126 = Bytes{0x89, 0x80 | 126, 0, 126} + Bytes(4 + 126, 0);
    const std::vector<Case> cases = {
        {"RSV1", Bytes{0xC1, 0x80}, 1002, 2},
        {"RSV2", Bytes{0xA1, 0x80}, 1002, 2},
        {"RSV3", Bytes{0x91, 0x80}, 1002, 2},
        {"opcode 3", Bytes{0x83, 0x80}, 1002, 2},
        {"opcode 7", Bytes{0x87, 0x80}, 1002, 2},
        {"opcode B", Bytes{0x8B, 0x80}, 1002, 2},
        {"opcode F", Bytes{0x8F, 0x80}, 1002, 2},
        {"unmasked", Bytes{0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}, 1002, 2},
        {"16-bit length under 126", Bytes{0x82, 0xFE, 0x00, 0x7D}, 1002, 4},
        {"64-bit length under 65536", Bytes{0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF}, 1002, 10},
        {"64-bit length, top bit set", Bytes{0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0}, 1002, 10},
        {"ping of 126 bytes", ping126, 1002, 2},
        {"fragmented ping", client_frame(op(Opcode::ping), "x"), 1002, 2},
        {"fragmented close", client_frame(op(Opcode::close), ""), 1002, 2},
        {"continuation first", client_frame(kFin | op(Opcode::continuation), "x"), 1002, 2},
        {"text inside a text message", text + client_frame(kFin | op(Opcode::text), "x"), 1002,
         text.size() + 2},
        {"binary inside a text message", text + client_frame(kFin | op(Opcode::binary), "x"), 1002,
         text.size() + 2},
        {"continuation after the end",
         client_frame(kFin | op(Opcode::text), "a") + client_frame(op(Opcode::continuation), "b"),
         1002, 9},
        {"close of one byte", client_frame(kFin | op(Opcode::close), "\x03"), 1002, 7},
        {"close 1004", client_frame(kFin | op(Opcode::close), close_payload(1004)), 1002, 8},
        {"close 1005", client_frame(kFin | op(Opcode::close), close_payload(1005)), 1002, 8},
        {"close 1006", client_frame(kFin | op(Opcode::close), close_payload(1006)), 1002, 8},
        {"close 1015", client_frame(kFin | op(Opcode::close), close_payload(1015, "x")), 1002, 9},
        {"close 999", client_frame(kFin | op(Opcode::close), close_payload(999)), 1002, 8},
        {"close 2999", client_frame(kFin | op(Opcode::close), close_payload(2999)), 1002, 8},
        {"close 5000", client_frame(kFin | op(Opcode::close), close_payload(5000)), 1002, 8},
        {"close 0", client_frame(kFin | op(Opcode::close), close_payload(0)), 1002, 8},
        {"close reason not UTF-8",
         client_frame(kFin | op(Opcode::close), close_payload(1000, "ok \xED\xA0\x80")), 1007, 14},
        {"close reason cut inside a character",
         client_frame(kFin | op(Opcode::close), close_payload(1000, "\xCE")), 1007, 9},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        const std::string expected =
            "fail " + std::to_string(c.code) + " after " + std::to_string(c.consumed);
        CHECK(last(read(c.stream)) == expected);
        // Fed one byte at a time, it fails at the same byte.
        std::vector<std::size_t> every_byte(c.stream.size() - 1);
        for (std::size_t i = 0; i < every_byte.size(); ++i) every_byte[i] = i + 1;
        CHECK(last(read(c.stream, every_byte)) == expected);
    }
}

TEST_CASE("websocket frames/a failure is for good", "[http]") {
    FrameReader reader;
    Bytes input = {0xC1, 0x80, 0x81, 0x80};
    FrameReader::Step step = reader.next(input);
    CHECK((step.event == Event::fail && step.error == CloseCode::protocol_error &&
           step.consumed == 2));
    CHECK(reader.failed());
    std::span<std::uint8_t> rest(input.data() + 2, 2);
    step = reader.next(rest);
    CHECK((step.event == Event::fail && step.error == CloseCode::protocol_error &&
           step.consumed == 0));
}

TEST_CASE("websocket frames/close codes a peer may send", "[http]") {
    for (int code : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000,
                     3999, 4000, 4999}) {
        INFO(code);
        CHECK(peer_may_send(static_cast<std::uint16_t>(code)));
        const std::string payload = close_payload(static_cast<std::uint16_t>(code), "bye");
        CHECK(read(client_frame(kFin | op(Opcode::close), payload)).events ==
              std::vector<std::string>{"close " + payload});
    }
    for (int code : {0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535}) {
        INFO(code);
        CHECK_FALSE(peer_may_send(static_cast<std::uint16_t>(code)));
    }
    // An empty close frame is allowed: no status.
    CHECK(read(client_frame(kFin | op(Opcode::close), "")).events ==
          std::vector<std::string>{"close "});
}

TEST_CASE("websocket frames/control frames between fragments, and empty frames", "[http]") {
    const Bytes stream =
        client_frame(op(Opcode::text), "") + client_frame(kFin | op(Opcode::ping), "") +
        client_frame(op(Opcode::continuation), "a") + client_frame(kFin | op(Opcode::pong), "p") +
        client_frame(op(Opcode::continuation), "") +
        client_frame(kFin | op(Opcode::continuation), "b") +
        client_frame(kFin | op(Opcode::binary), "") +
        client_frame(kFin | op(Opcode::ping), std::string(125, 'x'));
    CHECK(read(stream).events == std::vector<std::string>{"ping ", "pong p", "text ab", "binary ",
                                                          "ping " + std::string(125, 'x')});
}

TEST_CASE("websocket frames/text must be UTF-8 across fragments and reads (1007)", "[http]") {
    // U+20AC split across three fragments is valid.
    const Bytes euro = client_frame(op(Opcode::text), "1 \xE2") +
                       client_frame(op(Opcode::continuation), "\x82") +
                       client_frame(kFin | op(Opcode::continuation), "\xAC!");
    CHECK(read(euro).events == std::vector<std::string>{"text 1 \xE2\x82\xAC!"});
    // A message that ends inside a character is not.
    CHECK(failure(client_frame(op(Opcode::text), "ok") +
                  client_frame(kFin | op(Opcode::continuation), "\xE2\x82")) == 1007);
    CHECK(failure(client_frame(kFin | op(Opcode::text), "\xCE")) == 1007);
    // Nor a surrogate, and the first fragment fails before the rest arrives.
    const Bytes surrogate = client_frame(op(Opcode::text), "a\xED\xA0\x80");
    CHECK(failure(surrogate) == 1007);
    // Binary messages are not checked.
    CHECK(read(client_frame(kFin | op(Opcode::binary), "\xFF\xC0")).events ==
          std::vector<std::string>{"binary \xFF\xC0"});
}

TEST_CASE("websocket frames/max_message fails with 1009 at the header that passes it", "[http]") {
    CHECK(read(client_frame(kFin | op(Opcode::text), std::string(16, 'a')), {}, 16).events ==
          std::vector<std::string>{"text " + std::string(16, 'a')});
    CHECK(failure(client_frame(kFin | op(Opcode::text), std::string(17, 'a')), 16) == 1009);
    // Across fragments.
    CHECK(failure(client_frame(op(Opcode::binary), std::string(10, 'a')) +
                      client_frame(kFin | op(Opcode::continuation), std::string(7, 'a')),
                  16) == 1009);
    // The header alone is enough: a frame announcing 1 GiB fails with its
    // first payload byte, not after a gigabyte.
    Bytes huge = {0x82, 0xFF, 0, 0, 0, 0, 0x40, 0, 0, 0, 1, 2, 3, 4, 0};
    FrameReader reader;
    const FrameReader::Step step = reader.next(huge);
    REQUIRE(step.event == Event::data);
    CHECK(step.frame_remaining == (std::uint64_t{1} << 30) - 1);
    std::vector<std::uint8_t> storage(1 << 20);
    MessageAssembler assembler(storage);
    CHECK(assembler.add(step) == MessageStatus::fail);
    CHECK(assembler.error() == CloseCode::message_too_big);
    // MessageCheck alone, keeping nothing.
    MessageCheck check(1 << 20);
    CHECK(check.add(step) == MessageStatus::fail);
    CHECK(check.error() == CloseCode::message_too_big);
}

TEST_CASE("websocket frames/a stream reads the same whole, at every split and every pair",
          "[http]") {
    const std::string medium(130, 'm'); // a 16-bit length
    const Bytes stream =
        client_frame(kFin | op(Opcode::text), "Hello", {0, 0, 0, 0}) +
        client_frame(op(Opcode::binary), "ab\x00\xFF"sv, {9, 8, 7, 6}) +
        client_frame(kFin | op(Opcode::ping), "are you there") +
        client_frame(kFin | op(Opcode::continuation), "cd", {0xFF, 0xFF, 0xFF, 0xFF}) +
        client_frame(op(Opcode::text), "\xCE\xBA\xE1\xBD\xB9") +
        client_frame(kFin | op(Opcode::continuation), "\xCF\x83\xCE\xBC\xCE\xB5") +
        client_frame(kFin | op(Opcode::pong), "") +
        client_frame(kFin | op(Opcode::binary), medium) +
        client_frame(kFin | op(Opcode::text), "") +
        client_frame(kFin | op(Opcode::close), close_payload(1000, "bye"));
    const Transcript whole = read(stream, {}, 256);
    REQUIRE(whole.events == std::vector<std::string>{
                                "text Hello", "ping are you there", "binary ab\x00\xFF"s + "cd",
                                "text \xCE\xBA\xE1\xBD\xB9\xCF\x83\xCE\xBC\xCE\xB5", "pong ",
                                "binary " + medium, "text ",
                                "close " + close_payload(1000, "bye")});
    for (std::size_t i = 0; i <= stream.size(); ++i) {
        INFO("cut at " << i);
        REQUIRE(read(stream, {i}, 256) == whole);
        for (std::size_t j = i; j <= stream.size(); ++j) {
            INFO("and at " << j);
            REQUIRE(read(stream, {i, j}, 256) == whole);
        }
    }
    // A stream that fails reads the same too.
    const Bytes failing = client_frame(kFin | op(Opcode::text), "Hello") +
                          client_frame(kFin | op(Opcode::ping), "are you there") +
                          client_frame(0xC1, "x");
    const Transcript failed = read(failing);
    REQUIRE(last(failed) == "fail 1002 after " + std::to_string(failing.size() - 5));
    for (std::size_t i = 0; i <= failing.size(); ++i) REQUIRE(read(failing, {i}) == failed);
}

TEST_CASE("websocket frames/unmask agrees with the byte loop at every phase and length", "[http]") {
    const std::uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};
    for (unsigned phase = 0; phase < 4; ++phase)
        for (std::size_t size = 0; size < 40; ++size) {
            std::vector<std::uint8_t> data(size), expected(size);
            for (std::size_t i = 0; i < size; ++i) {
                data[i] = static_cast<std::uint8_t>(i * 31);
                expected[i] = data[i] ^ mask[(phase + i) % 4];
            }
            const unsigned next = unmask(data.data(), size, mask, phase);
            INFO(phase << " " << size);
            CHECK(data == expected);
            CHECK(next == (phase + size) % 4);
        }
}

TEST_CASE("websocket frames/close frames: code, reason cut before a character", "[http]") {
    std::uint8_t out[kMaxControlFrame];
    std::size_t n = write_close_frame(out, CloseCode::going_away, "restart");
    CHECK(Bytes(out, out + n) == Bytes{0x88, 0x09, 0x03, 0xE9, 'r', 'e', 's', 't', 'a', 'r', 't'});
    n = write_close_frame(out, CloseCode::normal, "");
    CHECK(Bytes(out, out + n) == Bytes{0x88, 0x02, 0x03, 0xE8});
    // 200 ASCII bytes: 123 of them fit.
    n = write_close_frame(out, CloseCode::message_too_big, std::string(200, 'r'));
    CHECK(n == kMaxControlFrame);
    CHECK(out[1] == 125);
    // 'é' is two bytes: 61 of them (122 bytes) fit, not 61 and a half.
    std::string accents;
    for (int i = 0; i < 100; ++i) accents += "\xC3\xA9";
    n = write_close_frame(out, CloseCode::policy_violation, accents);
    CHECK(n == 2 + 2 + 122);
    CHECK(std::string_view(reinterpret_cast<const char*>(out) + 4, 122) == accents.substr(0, 122));
    // '€' is three: 41 of them (123 bytes) fit exactly.
    std::string euros;
    for (int i = 0; i < 50; ++i) euros += "\xE2\x82\xAC";
    CHECK(write_close_frame(out, CloseCode::normal, euros) == kMaxControlFrame);
    // What weft writes, a client echoing it masked reads back whole.
    const std::string payload(reinterpret_cast<const char*>(out) + 2, out[1]);
    CHECK(read(client_frame(kFin | op(Opcode::close), payload)).events ==
          std::vector<std::string>{"close " + payload});
    // Pings and pongs echo a payload.
    const std::uint8_t ping[] = {'p', 'i', 'n', 'g'};
    n = write_control_frame(out, Opcode::pong, ping);
    CHECK(Bytes(out, out + n) == Bytes{0x8A, 0x04, 'p', 'i', 'n', 'g'});
}

#if !WEFT_ASAN
TEST_CASE("websocket frames/reading and assembling allocate nothing", "[http]") {
    Bytes stream = client_frame(op(Opcode::text), "Hel") +
                   client_frame(kFin | op(Opcode::ping), "x") +
                   client_frame(kFin | op(Opcode::continuation), "lo") +
                   client_frame(kFin | op(Opcode::binary), std::string(70000, 'b'));
    std::vector<std::uint8_t> storage(1 << 17);
    const long before = test::allocations;
    FrameReader reader;
    MessageAssembler assembler(storage);
    int messages = 0;
    for (std::size_t start = 0; start < stream.size(); start += 1000) {
        std::span<std::uint8_t> piece(stream.data() + start,
                                      std::min<std::size_t>(1000, stream.size() - start));
        while (!piece.empty()) {
            const FrameReader::Step step = reader.next(piece);
            piece = piece.subspan(step.consumed);
            if (step.event == Event::data && assembler.add(step) == MessageStatus::complete)
                ++messages;
        }
    }
    CHECK(test::allocations == before);
    CHECK(messages == 2);
}
#endif
