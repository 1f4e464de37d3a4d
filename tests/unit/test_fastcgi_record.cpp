// The FastCGI record codec. The writer byte for byte (BEGIN_REQUEST, the
// 1- and 4-byte pair lengths, a pair cut over records and over buffers,
// STDIN in place, the sticky error) and round trip through a decoder
// written here from the spec; the reader over a backend's stream cut at
// every point, and each thing it must refuse.

#include "fastcgi/record.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

using namespace weft::fastcgi;
using namespace std::string_literals;
using Kind = RecordReader::Kind;

namespace {

// Where the writer's flushes go: each flush kept apart, and an error to
// return from the flush numbered `fail_at` (0: never).
struct Sink {
    std::vector<std::string> flushes;
    std::size_t fail_at = 0;
    int calls = 0;

    static int flush(void* context, const char* bytes, std::size_t size) {
        auto* sink = static_cast<Sink*>(context);
        ++sink->calls;
        if (sink->fail_at != 0 && static_cast<std::size_t>(sink->calls) == sink->fail_at)
            return -EPIPE;
        sink->flushes.emplace_back(bytes, size);
        return 0;
    }

    std::string all() const {
        std::string out;
        for (const std::string& f : flushes) out += f;
        return out;
    }
};

// A writer with its buffer and sink.
struct Writer {
    std::vector<char> buffer;
    Sink sink;
    RecordWriter writer;

    explicit Writer(std::size_t capacity, std::uint16_t request_id = kRequestId)
        : buffer(capacity), writer(buffer.data(), capacity, &Sink::flush, &sink, request_id) {}
};

std::string header(RecordType type, std::uint16_t content_length, std::uint8_t padding = 0,
                   std::uint16_t request_id = kRequestId, std::uint8_t version = kVersion) {
    std::string out(8, '\0');
    out[0] = static_cast<char>(version);
    out[1] = static_cast<char>(type);
    out[2] = static_cast<char>(request_id >> 8);
    out[3] = static_cast<char>(request_id & 0xff);
    out[4] = static_cast<char>(content_length >> 8);
    out[5] = static_cast<char>(content_length & 0xff);
    out[6] = static_cast<char>(padding);
    return out;
}

// A whole record, with `padding` bytes of junk after the content.
std::string record(RecordType type, std::string_view content, std::uint8_t padding = 0,
                   std::uint16_t request_id = kRequestId) {
    return header(type, static_cast<std::uint16_t>(content.size()), padding, request_id) +
           std::string(content) + std::string(padding, '\xee');
}

std::string end_request(std::uint32_t app_status, ProtocolStatus protocol,
                        std::uint8_t padding = 0) {
    std::string body(8, '\0');
    body[0] = static_cast<char>(app_status >> 24);
    body[1] = static_cast<char>(app_status >> 16 & 0xff);
    body[2] = static_cast<char>(app_status >> 8 & 0xff);
    body[3] = static_cast<char>(app_status & 0xff);
    body[4] = static_cast<char>(protocol);
    return record(RecordType::end_request, body, padding);
}

// --- a decoder for what the writer sends, from the spec -------------------

struct Decoded {
    bool begin = false;
    bool keep_conn = false;
    std::vector<std::pair<std::string, std::string>> params;
    bool params_ended = false;
    std::string stdin_bytes;
    bool stdin_ended = false;
    bool aborted = false;
};

std::size_t read_length(std::string_view& s) {
    REQUIRE(!s.empty());
    const auto first = static_cast<unsigned char>(s[0]);
    if (first < 128) {
        s.remove_prefix(1);
        return first;
    }
    REQUIRE(s.size() >= 4);
    const std::size_t length = (std::size_t{first} & 0x7f) << 24 |
                               std::size_t{static_cast<unsigned char>(s[1])} << 16 |
                               std::size_t{static_cast<unsigned char>(s[2])} << 8 |
                               std::size_t{static_cast<unsigned char>(s[3])};
    s.remove_prefix(4);
    return length;
}

// Checks every record (version, id, lengths, order of streams) and gathers
// what they carry.
Decoded decode(std::string_view bytes, std::uint16_t request_id = kRequestId) {
    Decoded out;
    std::string params;
    while (!bytes.empty()) {
        REQUIRE(bytes.size() >= 8);
        REQUIRE(bytes[0] == 1);
        const auto type = static_cast<RecordType>(bytes[1]);
        const auto id = static_cast<std::uint16_t>(static_cast<unsigned char>(bytes[2]) << 8 |
                                                   static_cast<unsigned char>(bytes[3]));
        const std::size_t length = static_cast<std::size_t>(static_cast<unsigned char>(bytes[4]))
                                       << 8 |
                                   static_cast<unsigned char>(bytes[5]);
        const auto padding = static_cast<unsigned char>(bytes[6]);
        REQUIRE(id == request_id);
        REQUIRE(bytes[7] == 0);
        REQUIRE(bytes.size() >= 8 + length + padding);
        const std::string_view content = bytes.substr(8, length);
        bytes.remove_prefix(8 + length + padding);
        switch (type) {
        case RecordType::begin_request:
            REQUIRE_FALSE(out.begin);
            REQUIRE(length == 8);
            REQUIRE(content.substr(0, 2) == "\0\1"s);
            out.begin = true;
            out.keep_conn = content[2] == 1;
            break;
        case RecordType::params:
            REQUIRE(out.begin);
            REQUIRE_FALSE(out.params_ended);
            if (length == 0)
                out.params_ended = true;
            else
                params += content;
            break;
        case RecordType::stdin_:
            REQUIRE(out.params_ended);
            REQUIRE_FALSE(out.stdin_ended);
            if (length == 0)
                out.stdin_ended = true;
            else
                out.stdin_bytes += content;
            break;
        case RecordType::abort_request:
            REQUIRE(length == 0);
            out.aborted = true;
            break;
        default:
            FAIL("a record a web server does not send: " << static_cast<int>(type));
        }
    }
    std::string_view pairs = params;
    while (!pairs.empty()) {
        const std::size_t name_length = read_length(pairs);
        const std::size_t value_length = read_length(pairs);
        REQUIRE(pairs.size() >= name_length + value_length);
        out.params.emplace_back(pairs.substr(0, name_length),
                                pairs.substr(name_length, value_length));
        pairs.remove_prefix(name_length + value_length);
    }
    return out;
}

// --- the reader, fed in pieces ------------------------------------------------

// What a reader made of a stream: its data items with adjacent pieces of
// one kind joined, the end, or the error.
struct Read {
    std::vector<std::pair<Kind, std::string>> data;
    bool ended = false;
    std::uint32_t app_status = 0;
    ProtocolStatus protocol = ProtocolStatus::request_complete;
    std::string error;

    bool operator==(const Read&) const = default;
};

// Feeds `stream` cut at `cuts` (ascending), as a connection does: each
// piece arrives behind what was left unconsumed, next() runs until it
// wants more.
Read read(std::string_view stream, const std::vector<std::size_t>& cuts) {
    RecordReader reader;
    Read out;
    std::string pending;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : stream.size();
        pending += stream.substr(from, to - from);
        from = to;
        std::string_view input = pending;
        for (;;) {
            std::size_t consumed = 99;
            const RecordReader::Item item = reader.next(input, consumed);
            if (item.kind == Kind::error) {
                REQUIRE(item.error != nullptr);
                out.error = item.error;
                // Failed for good.
                std::size_t again = 0;
                CHECK(reader.next({}, again).kind == Kind::error);
                CHECK(reader.next("\1", again).kind == Kind::error);
                CHECK_FALSE(reader.ended());
                return out;
            }
            REQUIRE(consumed <= input.size());
            if (item.kind == Kind::need_more) {
                REQUIRE(consumed == input.size());
                input = {};
                break;
            }
            if (item.kind == Kind::end_request) {
                REQUIRE_FALSE(out.ended);
                REQUIRE(reader.ended());
                out.ended = true;
                out.app_status = item.app_status;
                out.protocol = item.protocol_status;
            } else {
                REQUIRE_FALSE(reader.ended());
                REQUIRE_FALSE(item.data.empty());
                REQUIRE(item.data.data() >= input.data());
                // Its padding may be taken with it.
                REQUIRE(item.data.data() + item.data.size() <= input.data() + consumed);
                if (out.data.empty() || out.data.back().first != item.kind)
                    out.data.emplace_back(item.kind, "");
                out.data.back().second += item.data;
            }
            input.remove_prefix(consumed);
        }
        pending = std::string(input);
    }
    return out;
}

// Reads whole, byte by byte, cut once everywhere and (when short) twice
// everywhere: all must agree. The whole read is returned.
Read read_every_way(std::string_view stream) {
    const Read whole = read(stream, {});
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < stream.size(); ++i) every.push_back(i);
    CHECK(read(stream, every) == whole);
    for (std::size_t i = 0; i <= stream.size(); ++i)
        if (read(stream, {i}) != whole) FAIL_CHECK("cut at " << i);
    if (stream.size() <= 120)
        for (std::size_t i = 0; i <= stream.size(); ++i)
            for (std::size_t j = i; j <= stream.size(); ++j)
                if (read(stream, {i, j}) != whole) FAIL_CHECK("cut at " << i << " and " << j);
    return whole;
}

// The error a stream ends in, the same however it is cut.
std::string refused(std::string_view stream) {
    return read_every_way(stream).error;
}

// Whether every PARAMS record holds whole pairs, parsed alone as PHP-FPM
// parses each (its fastcgi.c drops the connection on a pair cut over two).
bool whole_pairs_in_each_record(std::string_view bytes) {
    while (bytes.size() >= 8) {
        const auto type = static_cast<RecordType>(bytes[1]);
        const std::size_t length = static_cast<std::size_t>(static_cast<unsigned char>(bytes[4]))
                                       << 8 |
                                   static_cast<unsigned char>(bytes[5]);
        std::string_view pairs = bytes.substr(8, length);
        bytes.remove_prefix(
            std::min(bytes.size(), 8 + length + static_cast<unsigned char>(bytes[6])));
        while (type == RecordType::params && !pairs.empty()) {
            std::size_t lengths[2];
            for (std::size_t& n : lengths) {
                if (pairs.empty()) return false;
                const auto first = static_cast<unsigned char>(pairs[0]);
                if (first < 128) {
                    n = first;
                    pairs.remove_prefix(1);
                    continue;
                }
                if (pairs.size() < 4) return false;
                n = (std::size_t{first} & 0x7f) << 24 |
                    std::size_t{static_cast<unsigned char>(pairs[1])} << 16 |
                    std::size_t{static_cast<unsigned char>(pairs[2])} << 8 |
                    std::size_t{static_cast<unsigned char>(pairs[3])};
                pairs.remove_prefix(4);
            }
            if (pairs.size() < lengths[0] + lengths[1]) return false;
            pairs.remove_prefix(lengths[0] + lengths[1]);
        }
    }
    return bytes.empty();
}

} // namespace

// --- RecordWriter ---------------------------------------------------------------

TEST_CASE("encode_header writes the 8 bytes of the spec") {
    char out[8];
    encode_header(out, RecordType::stdin_, 0x1234, 0xabcd, 7);
    CHECK(std::string(out, 8) == "\x01\x05\x12\x34\xab\xcd\x07\x00"s);
}

TEST_CASE("the writer's BEGIN_REQUEST: the responder role, FCGI_KEEP_CONN on request") {
    Writer w(64);
    w.writer.begin_request(true);
    CHECK(w.writer.buffered() == 16);
    CHECK(w.sink.calls == 0); // nothing leaves before flush()
    REQUIRE(w.writer.flush() == 0);
    REQUIRE(w.sink.flushes.size() == 1);
    CHECK(w.sink.flushes[0] == "\x01\x01\x00\x01\x00\x08\x00\x00"
                               "\x00\x01\x01\x00\x00\x00\x00\x00"s);
    CHECK(w.writer.buffered() == 0);

    Writer other(64, 0x0102);
    other.writer.begin_request(false);
    REQUIRE(other.writer.flush() == 0);
    CHECK(other.sink.all() == "\x01\x01\x01\x02\x00\x08\x00\x00"
                              "\x00\x01\x00\x00\x00\x00\x00\x00"s);
}

TEST_CASE("a flush with nothing buffered does not call the callback") {
    Writer w(64);
    CHECK(w.writer.flush() == 0);
    CHECK(w.sink.calls == 0);
}

TEST_CASE("pair lengths: 1 byte below 128, 4 bytes with the top bit from 128") {
    STATIC_REQUIRE(length_size(0) == 1);
    STATIC_REQUIRE(length_size(127) == 1);
    STATIC_REQUIRE(length_size(128) == 4);

    Writer w(1024);
    const std::string v127(127, 'v'), v128(128, 'w'), n128(128, 'N');
    w.writer.param("A", v127);
    w.writer.param("B", v128);
    w.writer.param(n128, "");
    w.writer.end_params();
    REQUIRE(w.writer.flush() == 0);
    // One PARAMS record holds the three pairs: 130 + 134 + 133 bytes.
    const std::string expected = header(RecordType::params, 130 + 134 + 133) +
                                 "\x01\x7f"
                                 "A" +
                                 v127 +
                                 "\x01\x80\x00\x00\x80"
                                 "B"s +
                                 v128 + "\x80\x00\x00\x80\x00"s + n128 +
                                 header(RecordType::params, 0);
    CHECK(w.sink.all() == expected);
}

TEST_CASE("a pair longer than a record goes on in the next record") {
    Writer w(200000);
    const std::string value(70000, 'x');
    w.writer.param("NAME", value);
    w.writer.end_params();
    REQUIRE(w.writer.flush() == 0);
    REQUIRE(w.sink.flushes.size() == 1);
    // 1 + 4 length bytes, 4 of the name, then as much of the value as fits
    // 65535 bytes of content; the rest in a second record.
    const std::size_t first_part = 65535 - 9;
    const std::string expected = header(RecordType::params, 65535) +
                                 "\x04\x80\x01\x11\x70"
                                 "NAME"s +
                                 value.substr(0, first_part) +
                                 header(RecordType::params, 70000 - first_part) +
                                 value.substr(first_part) + header(RecordType::params, 0);
    CHECK(w.sink.all() == expected);
}

TEST_CASE("a tiny buffer: a pair goes on through flushes in a record of its own, never cut") {
    Writer w(64);
    const std::string value(100, 'b');
    w.writer.begin_request(true);
    w.writer.param("A", value);
    CHECK(w.sink.calls == 1);
    w.writer.end_params();
    CHECK(w.sink.calls == 2);
    REQUIRE(w.writer.flush() == 0);
    REQUIRE(w.sink.flushes.size() == 3);

    // The pair is 103 bytes, one record: its header and 40 bytes fill the
    // first buffer behind BEGIN_REQUEST, the other 63 the second; the end of
    // the stream finds no room behind them.
    const std::string pair = "\x01\x64"
                             "A" +
                             value;
    CHECK(w.sink.flushes[0] == "\x01\x01\x00\x01\x00\x08\x00\x00"
                               "\x00\x01\x01\x00\x00\x00\x00\x00"s +
                                   header(RecordType::params, 103) + pair.substr(0, 40));
    CHECK(w.sink.flushes[1] == pair.substr(40));
    CHECK(w.sink.flushes[2] == header(RecordType::params, 0));
}

TEST_CASE("a pair that does not fit the open record starts one of its own") {
    Writer w(64);
    w.writer.param("A", "1");                  // 4 bytes in an open record
    w.writer.param("B", "22222222");           // 11: fits behind it
    w.writer.param("C", std::string(60, 'c')); // 63: not in the 41 left, nor a new record there
    w.writer.param("D", "4");                  // 4: a new record in the room left
    w.writer.end_params();
    REQUIRE(w.writer.flush() == 0);
    const std::string all = w.sink.all();
    CHECK(all == header(RecordType::params, 15) +
                     "\x01\x01"
                     "A1"
                     "\x01\x08"
                     "B22222222" +
                     header(RecordType::params, 63) +
                     "\x01\x3c"
                     "C" +
                     std::string(60, 'c') + header(RecordType::params, 4) +
                     "\x01\x01"
                     "D4" +
                     header(RecordType::params, 0));
    CHECK(whole_pairs_in_each_record(all));
    // Flushed when full: the first buffer to its last byte.
    REQUIRE(w.sink.flushes.size() == 2);
    CHECK(w.sink.flushes[0].size() == 64);
}

TEST_CASE("a pair of exactly a record's content is one record, and one byte more is cut") {
    for (std::size_t capacity : {64, 16384, 70000}) {
        INFO("capacity " << capacity);
        Writer fits(capacity);
        fits.writer.param("A", "1");
        // 1 + 4 length bytes, 4 of the name: 65535 in all.
        const std::string value(kMaxContent - 9, 'x');
        fits.writer.param("NAME", value);
        fits.writer.param("B", "2");
        fits.writer.end_params();
        REQUIRE(fits.writer.flush() == 0);
        CHECK(fits.sink.all() == header(RecordType::params, 4) +
                                     "\x01\x01"
                                     "A1" +
                                     header(RecordType::params, 65535) +
                                     "\x04\x80\x00\xff\xf6"
                                     "NAME"s +
                                     value + header(RecordType::params, 4) +
                                     "\x01\x01"
                                     "B2" +
                                     header(RecordType::params, 0));

        Writer over(capacity);
        over.writer.begin_request(false);
        over.writer.param("NAME", value + "y");
        over.writer.end_params();
        REQUIRE(over.writer.flush() == 0);
        const Decoded d = decode(over.sink.all());
        REQUIRE(d.params.size() == 1);
        CHECK(d.params[0].second == value + "y");
        CHECK_FALSE(whole_pairs_in_each_record(over.sink.all()));
    }
}

TEST_CASE("a head just under max_head: every PARAMS record holds whole pairs") {
    // As a request through a backend's 16 KiB buffer: params before, one
    // field as long as max_head allows, params after (a handler's own,
    // encoded beforehand), at every offset around the buffer's end.
    std::string extra;
    encode_pair(extra, "APP_ENV", "testing");
    encode_pair(extra, "APP_NAME", std::string(200, 'a'));
    for (std::size_t value_size : {15800, 16300, 16350, 16364, 16376}) {
        for (std::size_t filler = 0; filler < 600; filler += 7) {
            INFO("value " << value_size << ", filler " << filler);
            Writer w(16 * 1024);
            w.writer.begin_request(true);
            w.writer.param("SCRIPT_FILENAME", std::string(filler, 'f'));
            const std::string cookie(value_size, 'k');
            const std::string_view values[] = {cookie};
            w.writer.header_param("Cookie", values, "; ");
            w.writer.param("REQUEST_METHOD", "GET");
            w.writer.encoded_params(extra);
            w.writer.end_params();
            w.writer.end_stdin();
            REQUIRE(w.writer.flush() == 0);
            const std::string all = w.sink.all();
            CHECK(whole_pairs_in_each_record(all));
            const Decoded d = decode(all);
            REQUIRE(d.params.size() == 5);
            CHECK(d.params[1] == std::pair<std::string, std::string>("HTTP_COOKIE", cookie));
            CHECK(d.params[4].first == "APP_NAME");
            CHECK(d.stdin_ended);
            for (std::size_t i = 0; i + 1 < w.sink.flushes.size(); ++i)
                CHECK(w.sink.flushes[i].size() + 9 > 16 * 1024);
        }
    }
}

TEST_CASE("a request of any size goes through any buffer and decodes back") {
    std::vector<std::pair<std::string, std::string>> params = {
        {"SCRIPT_FILENAME", "/srv/www/index.php"},
        {"QUERY_STRING", ""},
        {"EMPTY_VALUE_AND_NAME", ""},
        {"", ""},
        {"V127", std::string(127, '7')},
        {"V128", std::string(128, '8')},
        {std::string(127, 'n'), "x"},
        {std::string(128, 'N'), "y"},
        {"HUGE", std::string(140000, 'h')},
        {"REQUEST_METHOD", "POST"},
    };
    std::string body;
    for (int i = 0; i < 70000; ++i) body += static_cast<char>('a' + i % 26);

    for (std::size_t capacity : {64, 65, 100, 4096, 65543, 65544, 200000, 400000}) {
        INFO("capacity " << capacity);
        for (bool in_place : {false, true}) {
            Writer w(capacity);
            w.writer.begin_request(in_place);
            for (const auto& [name, value] : params) w.writer.param(name, value);
            w.writer.end_params();
            if (in_place) {
                // Read into the buffer in pieces of up to 1000 bytes.
                std::size_t at = 0;
                while (at < body.size()) {
                    const std::span<char> room = w.writer.stdin_space(1000);
                    REQUIRE_FALSE(room.empty());
                    REQUIRE(room.size() <= 1000);
                    const std::size_t n = std::min(room.size(), body.size() - at);
                    std::memcpy(room.data(), body.data() + at, n);
                    w.writer.commit_stdin(n);
                    at += n;
                }
            } else {
                w.writer.stdin_bytes(std::string_view(body).substr(0, 3));
                w.writer.stdin_bytes(std::string_view(body).substr(3));
            }
            w.writer.end_stdin();
            REQUIRE(w.writer.flush() == 0);

            // Each flush but the last came from a buffer with no room left
            // for the next record (a 16-byte BEGIN_REQUEST at most).
            for (std::size_t i = 0; i + 1 < w.sink.flushes.size(); ++i) {
                CHECK(w.sink.flushes[i].size() <= capacity);
                CHECK(w.sink.flushes[i].size() + 16 > capacity);
            }
            const Decoded d = decode(w.sink.all());
            CHECK(d.begin);
            CHECK(d.keep_conn == in_place);
            CHECK(d.params == params);
            CHECK(d.params_ended);
            CHECK(d.stdin_bytes == body);
            CHECK(d.stdin_ended);
            CHECK_FALSE(d.aborted);
        }
    }
}

TEST_CASE("header_param: HTTP_ and the name upper-cased, '-' as '_', values joined") {
    Writer w(256);
    const std::string_view accept[] = {"text/html", "application/json"};
    w.writer.header_param("Accept", accept, ", ");
    const std::string_view one[] = {"a=1"};
    w.writer.header_param("x-my-Header_2", one, "; ");
    const std::string_view cookies[] = {"a=1", "b=2", "c=3"};
    w.writer.header_param("cookie", cookies, "; ");
    w.writer.header_param("X-Empty", {}, ", ");
    w.writer.end_params();
    REQUIRE(w.writer.flush() == 0);

    const std::string expected_content = "\x0b\x1b"
                                         "HTTP_ACCEPT"
                                         "text/html, application/json"
                                         "\x12\x03"
                                         "HTTP_X_MY_HEADER_2"
                                         "a=1"
                                         "\x0b\x0d"
                                         "HTTP_COOKIE"
                                         "a=1; b=2; c=3"
                                         "\x0c\x00"
                                         "HTTP_X_EMPTY"s;
    CHECK(w.sink.all() ==
          header(RecordType::params, static_cast<std::uint16_t>(expected_content.size())) +
              expected_content + header(RecordType::params, 0));
}

TEST_CASE("header_param: a long name through a tiny buffer, a value over 127 bytes") {
    std::string name;
    for (int i = 0; i < 300; ++i) name += i % 7 == 0 ? '-' : static_cast<char>('a' + i % 26);
    std::string expected_name = "HTTP_";
    for (char c : name) expected_name += c == '-' ? '_' : static_cast<char>(c - 'a' + 'A');
    const std::string part(100, 'p');
    const std::string_view values[] = {part, part};

    Writer w(64);
    w.writer.begin_request(false);
    w.writer.header_param(name, values, "|");
    w.writer.end_params();
    REQUIRE(w.writer.flush() == 0);
    const Decoded d = decode(w.sink.all());
    REQUIRE(d.params.size() == 1);
    CHECK(d.params[0].first == expected_name);
    CHECK(d.params[0].second == part + "|" + part);
}

TEST_CASE("stdin_space gives room inside a STDIN record, commit_stdin fills it") {
    Writer w(64);
    w.writer.begin_request(false);
    w.writer.end_params(); // 24 bytes so far

    std::span<char> room = w.writer.stdin_space(100);
    REQUIRE(room.size() == 32); // behind a STDIN header at 24
    CHECK(room.data() == w.buffer.data() + 32);
    std::memset(room.data(), 'x', 32);
    w.writer.commit_stdin(32);
    CHECK(w.sink.calls == 0);
    CHECK(w.writer.buffered() == 64);

    // Full: the next room comes after a flush, in a new record.
    room = w.writer.stdin_space(10);
    CHECK(w.sink.calls == 1);
    REQUIRE(room.size() == 10);
    CHECK(room.data() == w.buffer.data() + 8);
    std::memcpy(room.data(), "hello", 5);
    w.writer.commit_stdin(5);

    // Room asked for and none used: no empty record (it would end STDIN).
    room = w.writer.stdin_space(7);
    CHECK(room.size() == 7);
    w.writer.commit_stdin(0);
    CHECK(w.writer.stdin_space(0).empty());
    w.writer.end_stdin();
    REQUIRE(w.writer.flush() == 0);
    REQUIRE(w.sink.flushes.size() == 2);
    CHECK(w.sink.flushes[0].substr(16) ==
          header(RecordType::params, 0) + header(RecordType::stdin_, 32) + std::string(32, 'x'));
    CHECK(w.sink.flushes[1] ==
          header(RecordType::stdin_, 5) + "hello" + header(RecordType::stdin_, 0));
}

TEST_CASE("an open record with nothing in it is neither counted nor sent") {
    Writer w(64);
    w.writer.stdin_space(5);
    w.writer.commit_stdin(0);
    CHECK(w.writer.buffered() == 0);
    CHECK(w.writer.flush() == 0);
    CHECK(w.sink.calls == 0);
    w.writer.stdin_bytes("");
    w.writer.param("A", "b");
    CHECK(w.writer.buffered() == 12);
}

TEST_CASE("streams of another type close the open record first") {
    Writer w(128);
    w.writer.stdin_bytes("ab");
    w.writer.abort_request();
    w.writer.stdin_bytes("cd");
    w.writer.stdin_bytes("ef");
    REQUIRE(w.writer.flush() == 0);
    w.writer.stdin_bytes("gh");
    REQUIRE(w.writer.flush() == 0);
    CHECK(w.sink.all() == header(RecordType::stdin_, 2) + "ab" +
                              header(RecordType::abort_request, 0) + header(RecordType::stdin_, 4) +
                              "cdef" + header(RecordType::stdin_, 2) + "gh");
}

TEST_CASE("the first flush error sticks: nothing more is written or flushed") {
    Writer w(64);
    w.sink.fail_at = 2;
    w.writer.begin_request(true);
    w.writer.param("A", std::string(150, 'b')); // the second buffer fails
    CHECK(w.sink.calls == 2);
    CHECK(w.writer.error() == -EPIPE);
    w.writer.param("C", std::string(200, 'd'));
    w.writer.end_params();
    w.writer.stdin_bytes(std::string(300, 'e'));
    CHECK(w.writer.stdin_space(10).empty());
    w.writer.commit_stdin(0);
    w.writer.end_stdin();
    w.writer.abort_request();
    CHECK(w.writer.flush() == -EPIPE);
    CHECK(w.writer.flush() == -EPIPE);
    CHECK(w.sink.calls == 2);
    CHECK(w.sink.flushes.size() == 1);
    CHECK(w.writer.error() == -EPIPE);
}

TEST_CASE("an error from flush() itself sticks too") {
    Writer w(64);
    w.sink.fail_at = 1;
    w.writer.begin_request(false);
    CHECK(w.writer.flush() == -EPIPE);
    w.writer.end_params();
    CHECK(w.writer.flush() == -EPIPE);
    CHECK(w.sink.calls == 1);
}

// --- RecordReader --------------------------------------------------------------

TEST_CASE("the reader hands out a backend's stream alike at every cut") {
    const std::string head = "X-Powered-By: PHP/8.2\r\nContent-type: text/html\r\n\r\n";
    const std::string stream =
        record(RecordType::stdout_, head, 5) + record(RecordType::stderr_, "PHP Notice: x", 3) +
        record(RecordType::stdout_, "<p>Hello</p>", 0) +
        record(RecordType::stdout_, "<p>world</p>", 4) + record(RecordType::stderr_, "more", 0) +
        record(RecordType::stdout_, "") + end_request(0x01020304, ProtocolStatus::request_complete);
    const Read r = read_every_way(stream);
    CHECK(r.error.empty());
    CHECK(r.ended);
    CHECK(r.app_status == 0x01020304);
    CHECK(r.protocol == ProtocolStatus::request_complete);
    const std::vector<std::pair<Kind, std::string>> expected = {
        {Kind::stdout_data, head},
        {Kind::stderr_data, "PHP Notice: x"},
        {Kind::stdout_data, "<p>Hello</p><p>world</p>"},
        {Kind::stderr_data, "more"},
    };
    CHECK(r.data == expected);
}

TEST_CASE("the reader: a padded END_REQUEST ends once its padding is in") {
    const std::string stream =
        record(RecordType::stdout_, "", 2) + end_request(7, ProtocolStatus::overloaded, 6);
    const Read r = read_every_way(stream);
    CHECK(r.error.empty());
    CHECK(r.ended);
    CHECK(r.app_status == 7);
    CHECK(r.protocol == ProtocolStatus::overloaded);
    CHECK(r.data.empty());

    RecordReader reader;
    std::size_t consumed = 0;
    const std::string_view all = stream;
    CHECK(reader.next(all.substr(0, all.size() - 1), consumed).kind == Kind::need_more);
    CHECK(consumed == all.size() - 1);
    CHECK_FALSE(reader.ended());
    CHECK(reader.next(all.substr(all.size() - 1), consumed).kind == Kind::end_request);
    CHECK(consumed == 1);
    CHECK(reader.ended());
    CHECK(reader.next({}, consumed).kind == Kind::need_more);
    CHECK(consumed == 0);
    CHECK(reader.ended());
}

TEST_CASE("the reader: a long record's content comes as it arrives") {
    const std::string content(65535, 'c');
    const std::string stream = record(RecordType::stdout_, content, 255) +
                               end_request(0, ProtocolStatus::request_complete);
    RecordReader reader;
    std::size_t consumed = 0;
    RecordReader::Item item = reader.next(std::string_view(stream).substr(0, 1000), consumed);
    REQUIRE(item.kind == Kind::stdout_data);
    CHECK(item.data.size() == 992);
    CHECK(consumed == 1000);
    const std::string_view rest = std::string_view(stream).substr(1000);
    item = reader.next(rest, consumed);
    REQUIRE(item.kind == Kind::stdout_data);
    CHECK(item.data.size() == 65535 - 992);
    item = reader.next(rest.substr(consumed), consumed);
    CHECK(item.kind == Kind::end_request);
    // Whole, and byte by byte (every cut of so long a stream would be slow).
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < stream.size(); ++i) every.push_back(i);
    const Read whole = read(stream, {});
    CHECK(read(stream, every) == whole);
    CHECK(read(stream, {1, 9, 4000, 65543, 65544, 65700}) == whole);
    CHECK(whole.ended);
    REQUIRE(whole.data.size() == 1);
    CHECK(whole.data[0].second == content);
}

TEST_CASE("the reader refuses what a responder's backend must not send") {
    const std::string out = record(RecordType::stdout_, "Status: 200\r\n\r\n", 1);
    const std::string end = end_request(0, ProtocolStatus::request_complete);

    SECTION("another version") {
        std::string bad = record(RecordType::stdout_, "x");
        bad[0] = 2;
        CHECK(refused(out + bad) == "not a FastCGI 1 record");
        bad[0] = 0;
        CHECK(refused(bad) == "not a FastCGI 1 record");
    }
    SECTION("another request id") {
        CHECK(refused(out + record(RecordType::stdout_, "x", 0, 2)) ==
              "a record for another request id");
        CHECK(refused(record(RecordType::end_request, std::string(8, '\0'), 0, 0)) ==
              "a record for another request id");
    }
    SECTION("a type other than STDOUT, STDERR and END_REQUEST") {
        for (int type : {0, 1, 2, 4, 5, 8, 9, 10, 11, 12, 255}) {
            INFO("type " << type);
            CHECK(refused(out + record(static_cast<RecordType>(type), "")) ==
                  "a record type a responder's backend does not send");
        }
    }
    SECTION("an END_REQUEST whose body is not 8 bytes") {
        CHECK(refused(out + record(RecordType::end_request, std::string(7, '\0'))) ==
              "an END_REQUEST whose body is not 8 bytes");
        CHECK(refused(out + record(RecordType::end_request, std::string(9, '\0'))) ==
              "an END_REQUEST whose body is not 8 bytes");
        CHECK(refused(record(RecordType::end_request, "")) ==
              "an END_REQUEST whose body is not 8 bytes");
    }
    SECTION("bytes after END_REQUEST") {
        CHECK(refused(out + end + "\x01") == "bytes after END_REQUEST");
        CHECK(refused(out + end + record(RecordType::stdout_, "late")) ==
              "bytes after END_REQUEST");
        CHECK(refused(end + record(RecordType::stderr_, "late")) == "bytes after END_REQUEST");
        CHECK(refused(end + end) == "bytes after END_REQUEST");
        // The end was handed out before the error.
        CHECK(read(out + end + "\x01", {}).ended);
    }
}

TEST_CASE("the reader: the first error sticks, whatever comes next") {
    RecordReader reader;
    std::size_t consumed = 0;
    std::string bad = record(RecordType::params, "");
    RecordReader::Item item = reader.next(bad, consumed);
    REQUIRE(item.kind == Kind::error);
    const std::string why = item.error;
    const std::string good = record(RecordType::stdout_, "x");
    item = reader.next(good, consumed);
    CHECK(item.kind == Kind::error);
    CHECK(item.error == why);
    CHECK(consumed == 0);
    CHECK(reader.next({}, consumed).kind == Kind::error);
}

TEST_CASE("the reader: reset() reads the next request on the same connection") {
    const std::string first =
        record(RecordType::stdout_, "one", 3) + end_request(0, ProtocolStatus::request_complete);
    const std::string second =
        record(RecordType::stdout_, "two") + end_request(1, ProtocolStatus::request_complete);
    RecordReader reader;
    std::size_t consumed = 0;
    std::string_view input = first;
    CHECK(reader.next(input, consumed).data == "one");
    input.remove_prefix(consumed);
    CHECK(reader.next(input, consumed).kind == Kind::end_request);
    CHECK(consumed == input.size());

    reader.reset();
    CHECK_FALSE(reader.ended());
    input = second;
    CHECK(reader.next(input, consumed).data == "two");
    input.remove_prefix(consumed);
    const RecordReader::Item end = reader.next(input, consumed);
    CHECK(end.kind == Kind::end_request);
    CHECK(end.app_status == 1);

    // And after an error too.
    reader.reset();
    CHECK(reader.next("\x02", consumed).kind == Kind::need_more);
    CHECK(reader.next("\x06\x00\x01\x00\x00\x00\x00"s, consumed).kind == Kind::error);
    reader.reset();
    input = second;
    CHECK(reader.next(input, consumed).data == "two");
}

TEST_CASE("the reader: another request id when asked for it") {
    RecordReader reader(0x0203);
    std::size_t consumed = 0;
    const std::string stream = record(RecordType::stdout_, "hi", 0, 0x0203);
    CHECK(reader.next(stream, consumed).data == "hi");
    RecordReader other;
    CHECK(other.next(stream, consumed).kind == Kind::error);
}

TEST_CASE("the pairs since a mark, copied in place, are the records writing them anew makes",
          "[fastcgi]") {
    const auto write_pairs = [](RecordWriter& w) {
        w.param("SCRIPT_NAME", "/index.php");
        const std::string_view agent[] = {"curl"};
        w.header_param("User-Agent", agent, ", ");
        w.param("EMPTY", "");
    };
    Sink anew_sink;
    char buffer[256];
    RecordWriter first(buffer, sizeof buffer, Sink::flush, &anew_sink);
    first.begin_request(true);
    const RecordWriter::Mark mark = first.mark();
    write_pairs(first);
    const std::string pairs(first.params_since(mark));
    CHECK(pairs == std::string("\x0b\x0aSCRIPT_NAME/index.php\x0f\x04HTTP_USER_AGENTcurl"
                               "\x05\x00"
                               "EMPTY",
                               51));
    first.end_params();
    REQUIRE(first.flush() == 0);

    Sink copied_sink;
    char other[256];
    RecordWriter second(other, sizeof other, Sink::flush, &copied_sink);
    second.begin_request(true);
    CHECK(second.encoded_params_in_place(pairs));
    second.end_params();
    REQUIRE(second.flush() == 0);
    CHECK(copied_sink.all() == anew_sink.all());
}

TEST_CASE("no pairs since a mark a flush came after, and none copied where they do not fit whole",
          "[fastcgi]") {
    Sink sink;
    char buffer[64];
    RecordWriter w(buffer, sizeof buffer, Sink::flush, &sink);
    w.begin_request(true);
    const RecordWriter::Mark mark = w.mark();
    w.param("A", std::string(30, 'a'));
    CHECK(w.params_since(mark).size() == 33);
    w.param("B", std::string(30, 'b')); // through a flush
    CHECK(w.params_since(mark).empty());

    // 48 bytes do not fit what is left of 64 after BEGIN_REQUEST and a header.
    Sink none;
    RecordWriter small(buffer, sizeof buffer, Sink::flush, &none);
    small.begin_request(true);
    CHECK_FALSE(small.encoded_params_in_place(std::string(41, 'x')));
    CHECK(small.buffered() == 16);
    CHECK(small.encoded_params_in_place(std::string(40, 'x')));
    CHECK(small.buffered() == 64);
}
