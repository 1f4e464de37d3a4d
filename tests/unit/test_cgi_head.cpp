// The CGI response head: what each accepted head yields (status, reason,
// Location and the local redirect, Content-Length, the fields in order),
// each refusal, the buffer's limit, and that a head fed byte by byte or cut
// anywhere gives exactly what it gives whole, with the body starting at the
// same byte.

#include "fastcgi/cgi_head.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace weft::fastcgi;
using namespace std::string_literals;
using Status = CgiHead::Status;

namespace {

// Everything a CgiHead says after a stream, as values to compare.
struct Outcome {
    Status status = Status::incomplete;
    std::string error;
    std::string body; // what followed the head in the stream, when done
    int code = 0;
    std::string reason;
    bool has_status = false;
    std::string location;
    bool local_redirect = false;
    std::uint64_t content_length = CgiHead::kNoLength;
    std::string content_type;
    std::vector<std::pair<std::string, std::string>> fields;

    bool operator==(const Outcome&) const = default;
};

bool inside(std::string_view view, const std::vector<char>& buffer) {
    return view.empty() || (view.data() >= buffer.data() &&
                            view.data() + view.size() <= buffer.data() + buffer.size());
}

// Feeds `stream` cut at `cuts` (ascending) to a CgiHead with a buffer of
// `capacity` bytes, as the STDOUT items arrive.
Outcome feed(std::string_view stream, const std::vector<std::size_t>& cuts, std::size_t capacity) {
    std::vector<char> buffer(capacity);
    auto head = std::make_unique<CgiHead>(buffer.data(), capacity);
    Outcome out;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : stream.size();
        const std::string_view piece = stream.substr(from, to - from);
        from = to;
        std::size_t consumed = 12345;
        out.status = head->feed(piece, consumed);
        if (out.status == Status::incomplete) {
            REQUIRE(consumed == piece.size());
            continue;
        }
        if (out.status == Status::error) {
            REQUIRE(head->error() != nullptr);
            out.error = head->error();
        } else {
            REQUIRE(consumed <= piece.size());
            out.body = std::string(piece.substr(consumed)) + std::string(stream.substr(to));
        }
        break;
    }
    if (out.status != Status::done) return out;

    // Past done, it takes nothing.
    std::size_t consumed = 1;
    CHECK(head->feed("more", consumed) == Status::done);
    CHECK(consumed == 0);

    out.code = head->status();
    out.reason = head->reason();
    out.has_status = head->has_status();
    out.location = head->location();
    out.local_redirect = head->local_redirect();
    out.content_length = head->content_length();
    out.content_type = head->content_type();
    CHECK(inside(head->reason(), buffer));
    CHECK(inside(head->location(), buffer));
    CHECK(inside(head->content_type(), buffer));
    REQUIRE(head->field_count() <= CgiHead::kMaxFields);
    for (std::size_t i = 0; i < head->field_count(); ++i) {
        const CgiField& f = head->fields()[i];
        CHECK(inside(f.name, buffer));
        CHECK(inside(f.value, buffer));
        out.fields.emplace_back(f.name, f.value);
    }
    return out;
}

// Fed whole, byte by byte, cut once everywhere and (when short) twice: all
// must agree. The whole feed's outcome is returned.
Outcome feed_every_way(std::string_view stream, std::size_t capacity = 4096) {
    const Outcome whole = feed(stream, {}, capacity);
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < stream.size(); ++i) every.push_back(i);
    CHECK(feed(stream, every, capacity) == whole);
    for (std::size_t i = 0; i <= stream.size(); ++i)
        if (feed(stream, {i}, capacity) != whole) FAIL_CHECK("cut at " << i);
    if (stream.size() <= 100)
        for (std::size_t i = 0; i <= stream.size(); ++i)
            for (std::size_t j = i; j <= stream.size(); ++j)
                if (feed(stream, {i, j}, capacity) != whole)
                    FAIL_CHECK("cut at " << i << " and " << j);
    return whole;
}

Outcome accept(std::string_view stream, std::size_t capacity = 4096) {
    const Outcome out = feed_every_way(stream, capacity);
    INFO(stream);
    INFO(out.error);
    REQUIRE(out.status == Status::done);
    return out;
}

std::string refuse(std::string_view stream, std::size_t capacity = 4096) {
    const Outcome out = feed_every_way(stream, capacity);
    INFO(stream);
    REQUIRE(out.status == Status::error);
    return out.error;
}

using Fields = std::vector<std::pair<std::string, std::string>>;

} // namespace

TEST_CASE("a PHP head: fields in order, status 200, the body after the empty line") {
    const Outcome out = accept("X-Powered-By: PHP/8.2.7\r\n"
                               "Set-Cookie: a=1; path=/\r\n"
                               "Content-type: text/html; charset=UTF-8\r\n"
                               "Set-Cookie: b=2\r\n"
                               "\r\n"
                               "<html>\r\n\r\nbody</html>");
    CHECK(out.code == 200);
    CHECK_FALSE(out.has_status);
    CHECK(out.reason.empty());
    CHECK(out.location.empty());
    CHECK_FALSE(out.local_redirect);
    CHECK(out.content_length == CgiHead::kNoLength);
    CHECK(out.content_type == "text/html; charset=UTF-8");
    CHECK(out.body == "<html>\r\n\r\nbody</html>");
    CHECK(out.fields == Fields{{"X-Powered-By", "PHP/8.2.7"},
                               {"Set-Cookie", "a=1; path=/"},
                               {"Content-type", "text/html; charset=UTF-8"},
                               {"Set-Cookie", "b=2"}});
}

TEST_CASE("lines end in LF or CRLF, the empty line too") {
    const Fields ab = {{"A", "1"}, {"B", "2"}};
    for (const char* head : {"A: 1\nB: 2\n\nbody", "A: 1\r\nB: 2\r\n\r\nbody",
                             "A: 1\r\nB: 2\n\r\nbody", "A: 1\nB: 2\r\n\nbody"}) {
        INFO(head);
        const Outcome out = accept(head);
        CHECK(out.fields == ab);
        CHECK(out.body == "body");
    }
    // The first empty line ends the head: an LF alone is one.
    CHECK(accept("\nA: 1\n\n").fields.empty());
    CHECK(accept("\r\nA: 1\n\n").body == "A: 1\n\n");
    CHECK(accept("A: 1\n\n").body.empty());
}

TEST_CASE("whitespace around a value is dropped, inside it kept") {
    const Outcome out = accept("A:1\r\nB: \t two  words \t\r\nC:\r\nD: \t \r\n\r\n");
    CHECK(out.fields == Fields{{"A", "1"}, {"B", "two  words"}, {"C", ""}, {"D", ""}});
    CHECK(accept("X: caf\xc3\xa9\r\n\r\n").fields == Fields{{"X", "caf\xc3\xa9"}});
}

TEST_CASE("Status: the code, the reason if any, and no field") {
    Outcome out = accept("Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\n");
    CHECK(out.code == 404);
    CHECK(out.reason == "Not Found");
    CHECK(out.has_status);
    CHECK(out.fields == Fields{{"Content-Type", "text/plain"}});

    out = accept("status: 503\r\n\r\n");
    CHECK(out.code == 503);
    CHECK(out.reason.empty());
    CHECK(out.fields.empty());

    out = accept("STATUS:200   OK then\r\n\r\n");
    CHECK(out.code == 200);
    CHECK(out.reason == "OK then");
    CHECK(accept("Status: 599 \r\n\r\n").code == 599);
    CHECK(accept("Status: 299\t\tx\r\n\r\n").reason == "x");
}

TEST_CASE("Status: three digits from 200 to 599, once") {
    for (const char* value : {"199", "600", "099", "000", "20", "2000", "1000 x", "20x", "abc",
                              "404x", "404-Not", "", "+404", "4 04", "999 Nope"}) {
        INFO("Status: " << value);
        CHECK(refuse("Status: "s + value + "\r\n\r\n") == "an invalid Status");
    }
    CHECK(refuse("Status: 200\r\nStatus: 200\r\n\r\n") == "a repeated Status");
    CHECK(refuse("Status: 200\r\nA: b\r\nstatus: 404\r\n\r\n") == "a repeated Status");
}

TEST_CASE("Location: a local path without Status is a local redirect") {
    Outcome out = accept("Location: /index.php?x=1\r\n\r\n");
    CHECK(out.location == "/index.php?x=1");
    CHECK(out.local_redirect);
    CHECK(out.code == 200);
    CHECK(out.fields == Fields{{"Location", "/index.php?x=1"}});
    CHECK(accept("location: /\r\n\r\n").local_redirect);
}

TEST_CASE("Location: any other without Status means 302, with Status the Status") {
    for (const char* location : {"http://example.com/", "//example.com/x", "x/y", "?q", "https:"}) {
        INFO(location);
        const Outcome out = accept("Location: "s + location + "\r\n\r\n");
        CHECK(out.code == 302);
        CHECK_FALSE(out.local_redirect);
        CHECK(out.location == location);
    }
    Outcome out = accept("Status: 301 Moved\r\nLocation: /new\r\n\r\n");
    CHECK(out.code == 301);
    CHECK_FALSE(out.local_redirect);
    CHECK(out.location == "/new");
    out = accept("Location: http://a/\r\nStatus: 303\r\n\r\n");
    CHECK(out.code == 303);
    CHECK_FALSE(out.local_redirect);

    // PHP's header($f, false) can send one twice: the later one counts.
    const auto twice = accept("Location: /a\r\nX: y\r\nLocation: http://h/b\r\n\r\n");
    CHECK(twice.location == "http://h/b");
    CHECK(twice.code == 302);
    CHECK(twice.fields.size() == 2);
    CHECK(twice.fields[0].second == "http://h/b");
    // An empty one says nothing.
    const auto empty = accept("Location:  \r\n\r\n");
    CHECK(empty.location.empty());
    CHECK(empty.code == 200);
    CHECK(empty.fields.empty());
}

TEST_CASE("Content-Length: digits, noted and kept, the same again dropped") {
    Outcome out = accept("Content-Length: 42\r\nX: y\r\n\r\n");
    CHECK(out.content_length == 42);
    CHECK(out.fields == Fields{{"Content-Length", "42"}, {"X", "y"}});
    CHECK(accept("content-length: 0\r\n\r\n").content_length == 0);
    CHECK(accept("Content-Length: 999999999999999999\r\n\r\n").content_length ==
          999999999999999999u);

    out = accept("Content-Length: 7\r\nX: y\r\ncontent-length: 007\r\n\r\n");
    CHECK(out.content_length == 7);
    CHECK(out.fields == Fields{{"Content-Length", "7"}, {"X", "y"}});

    for (const char* value : {"", "-1", "+5", "4a", "5 5", "5,5", "0x10", "1e3",
                              "1000000000000000000", "18446744073709551615"}) {
        INFO("Content-Length: " << value);
        CHECK(refuse("Content-Length: "s + value + "\r\n\r\n") == "an invalid Content-Length");
    }
    CHECK(refuse("Content-Length: 5\r\nContent-Length: 6\r\n\r\n") ==
          "conflicting Content-Lengths");
}

TEST_CASE("Content-Type: noted, kept, once") {
    const Outcome out = accept("content-TYPE: application/json\r\n\r\n");
    CHECK(out.content_type == "application/json");
    CHECK(out.fields == Fields{{"content-TYPE", "application/json"}});
    const auto twice = accept("Content-Type: a/b\r\nContent-Type: c/d\r\n\r\n");
    CHECK(twice.content_type == "c/d");
    CHECK(twice.fields.size() == 1);
}

TEST_CASE("an empty head: no fields, status 200") {
    const Outcome out = accept("\r\nbody");
    CHECK(out.code == 200);
    CHECK(out.fields.empty());
    CHECK(out.body == "body");
}

TEST_CASE("the head's refusals") {
    CHECK(refuse("A: 1\r\nno colon\r\n\r\n") == "a head line without a colon");
    CHECK(refuse("HTTP/1.1 200 OK\r\n\r\n") == "a head line without a colon");
    CHECK(refuse("HTTP/1.1: 200\r\n\r\n") == "an invalid field name");
    CHECK(refuse(": empty name\r\n\r\n") == "an invalid field name");
    CHECK(refuse("Name : space before the colon\r\n\r\n") == "an invalid field name");
    CHECK(refuse(" Folded: x\r\n\r\n") == "an invalid field name");
    CHECK(refuse("A: 1\r\n continued\r\n\r\n") == "a head line without a colon");
    CHECK(refuse("A: 1\r\n\tB: 2\r\n\r\n") == "an invalid field name");
    CHECK(refuse("Na\rme: x\r\n\r\n") == "an invalid field name");
    CHECK(refuse("Na(me): x\r\n\r\n") == "an invalid field name");
    CHECK(refuse("X: a\rb\r\n\r\n") == "a control character in a field value");
    CHECK(refuse("X: a\r\r\n\r\n") == "a control character in a field value");
    CHECK(refuse("X: a\0b\r\n\r\n"s) == "a control character in a field value");
    CHECK(refuse("X: a\x7f\r\n\r\n") == "a control character in a field value");
    CHECK(refuse("X: a\x1b[0m\r\n\r\n") == "a control character in a field value");
    // "\r\r\n" is not an empty line.
    CHECK(refuse("A: 1\r\n\r\r\n\r\n") == "a head line without a colon");
}

TEST_CASE("at most kMaxFields fields") {
    std::string head;
    for (std::size_t i = 0; i + 1 < CgiHead::kMaxFields; ++i)
        head += "F" + std::to_string(i) + ": v\n";
    head += "Content-Length: 1\n";
    // Status and the repeated Content-Length are not fields.
    const Outcome out = feed(head + "Status: 200\nContent-Length: 1\n\n", {}, 4096);
    REQUIRE(out.status == Status::done);
    CHECK(out.fields.size() == CgiHead::kMaxFields);

    const Outcome over = feed(head + "One: more\n\n", {}, 4096);
    REQUIRE(over.status == Status::error);
    CHECK(over.error == "too many head fields");
}

TEST_CASE("a head larger than its buffer is refused, the body does not count") {
    const std::string head = "Content-Type: text/plain\r\n\r\n"; // 28 bytes
    CHECK(accept(head + std::string(1000, 'b'), head.size()).body == std::string(1000, 'b'));
    CHECK(accept(head, head.size()).content_type == "text/plain");
    CHECK(refuse(head, head.size() - 1) == "the head does not fit its buffer");
    CHECK(refuse(head + "body", head.size() - 1) == "the head does not fit its buffer");
    CHECK(refuse(std::string(100, 'x'), 64) == "the head does not fit its buffer");
}

TEST_CASE("past an error it takes nothing, reset() starts over") {
    std::vector<char> buffer(256);
    CgiHead head(buffer.data(), buffer.size());
    std::size_t consumed = 0;
    CHECK(head.feed("bad line\r\n\r\n", consumed) == Status::error);
    CHECK(head.feed("A: b\r\n\r\n", consumed) == Status::error);
    CHECK(consumed == 0);

    head.reset();
    CHECK(head.error() == nullptr);
    CHECK(head.feed("Status: 404\r\nLocation: /x\r\nContent-Length: 3\r\n", consumed) ==
          Status::incomplete);
    CHECK(head.feed("\r\nabc", consumed) == Status::done);
    CHECK(consumed == 2);
    CHECK(head.status() == 404);

    head.reset();
    CHECK(head.feed("Content-Type: x/y\n\n", consumed) == Status::done);
    CHECK(head.status() == 200);
    CHECK_FALSE(head.has_status());
    CHECK(head.location().empty());
    CHECK(head.content_length() == CgiHead::kNoLength);
    CHECK(head.field_count() == 1);
    CHECK(head.content_type() == "x/y");
}

TEST_CASE("field names are classified once, whatever their case") {
    using K = FieldKind;
    const std::pair<const char*, K> names[] = {
        {"Status", K::status},
        {"STATUS", K::status},
        {"location", K::location},
        {"LoCaTiOn", K::location},
        {"Content-Type", K::content_type},
        {"content-TYPE", K::content_type},
        {"Content-Length", K::content_length},
        {"CONTENT-LENGTH", K::content_length},
        {"Connection", K::hop_by_hop},
        {"keep-alive", K::hop_by_hop},
        {"Transfer-Encoding", K::hop_by_hop},
        {"X-Accel-Buffering", K::x_accel_buffering},
        {"x-accel-buffering", K::x_accel_buffering},
        {"X-Accel-Redirect", K::x_accel},
        {"x-ACCEL-a", K::x_accel},
        // Look-alikes: a byte off anywhere, '_' for '-', the prefix alone.
        {"Statu", K::other},
        {"Statut", K::other},
        {"Xtatus", K::other},
        {"Locatio", K::other},
        {"Locatiom", K::other},
        {"Content_Type", K::other},
        {"Content-Typf", K::other},
        {"Dontent-Type", K::other},
        {"Content-Lengtx", K::other},
        {"Connectiox", K::other},
        {"Keep_Alive", K::other},
        {"Transfer-Encodinx", K::other},
        {"X-Accel-Bufferinh", K::x_accel},
        {"X-Accel-", K::other},
        {"X-Accel_A", K::other},
        {"X-Accelerated", K::other},
        {"X-Powered-By", K::other},
        {"Set-Cookie", K::other},
    };
    for (const auto& [name, kind] : names) {
        INFO(name);
        CHECK(field_kind(name) == kind);
    }
    // And as the parser hands them out.
    std::vector<char> buffer(256);
    CgiHead head(buffer.data(), buffer.size());
    std::size_t consumed = 0;
    REQUIRE(head.feed("x-accel-BUFFERING: no\nSet-Cookie: a\nCONNECTION: x\n"
                      "content-type: a/b\nX-Accel-Limit-Rate: 1\n\n",
                      consumed) == Status::done);
    REQUIRE(head.field_count() == 5);
    CHECK(head.fields()[0].kind == K::x_accel_buffering);
    CHECK(head.fields()[1].kind == K::other);
    CHECK(head.fields()[2].kind == K::hop_by_hop);
    CHECK(head.fields()[3].kind == K::content_type);
    CHECK(head.fields()[4].kind == K::x_accel);
}

TEST_CASE("a head is refused once it is whole, with the first error in it") {
    std::vector<char> buffer(256);
    CgiHead head(buffer.data(), buffer.size());
    std::size_t consumed = 0;
    // A bad line, then more: the head is not over yet.
    CHECK(head.feed("no colon\r\n", consumed) == Status::incomplete);
    CHECK(consumed == 10);
    CHECK(head.feed("X: a\x01\r\nStatus: 99\r\nA: 1\r\n", consumed) == Status::incomplete);
    CHECK(head.feed("\r\nbody", consumed) == Status::error);
    CHECK(std::string(head.error()) == "a head line without a colon");

    CHECK(refuse("Status: 404\r\nStatus: 404\r\nNo colon\r\nX: \x01\r\n\r\n") ==
          "a repeated Status");
    CHECK(refuse("X: \x01\r\nNo colon\r\nStatus: 1\r\n\r\n") ==
          "a control character in a field value");
    CHECK(refuse("Content-Length: 1\r\nContent-Length: 2\r\nA B: c\r\n\r\n") ==
          "conflicting Content-Lengths");
    // A bad line does not make a head that never ends fit.
    CHECK(refuse("no colon\r\n" + std::string(100, 'x'), 64) == "the head does not fit its buffer");
}

TEST_CASE("every byte of a long value is checked, whatever its place") {
    const std::string plain = "0123456789abcdefghijklmnopqrstuvwxyzABCD"; // 40 bytes
    for (std::size_t at = 0; at < plain.size(); ++at) {
        INFO("at " << at);
        for (const char bad : {'\x01', '\x00', '\x1f', '\x7f', '\r', '\x0b'}) {
            std::string value = plain;
            value[at] = bad;
            const Outcome out = feed("Set-Cookie: " + value + "\r\n\r\n", {}, 4096);
            CHECK(out.status == Status::error);
        }
        for (const char good : {'\t', ' ', '\x80', '\xff', '~', ':'}) {
            std::string value = plain;
            value[at] = good;
            const Outcome out = feed("Set-Cookie: " + value + "\r\n\r\n", {}, 4096);
            REQUIRE(out.status == Status::done);
            const std::size_t first = value.find_first_not_of(" \t");
            const std::size_t last = value.find_last_not_of(" \t");
            CHECK(out.fields == Fields{{"Set-Cookie", value.substr(first, last - first + 1)}});
        }
    }
    // Cut anywhere, a long value still gives what it gives whole.
    accept("A: " + plain + "\t" + plain + "\r\n\r\n");
    CHECK(refuse("A: " + plain + "\x7f" + plain + "\r\n\r\n") ==
          "a control character in a field value");
}
