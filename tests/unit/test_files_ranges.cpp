// Range requests: single, suffix and open ranges, unsatisfiable ones, and
// several as multipart/byteranges (files/ranges.hpp).

#include "handlers/files/ranges.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

using namespace weft::handlers;

namespace {

// The multipart body for `ranges` of `file`, as the handler writes it.
std::string body_of(const ByteRange* ranges, std::size_t n, const Multipart& m,
                    const std::string& file) {
    std::string body;
    char buffer[512];
    for (std::size_t i = 0; i < n; ++i) {
        body.append(buffer, m.part_head(ranges[i], buffer, sizeof buffer));
        body += file.substr(ranges[i].first, ranges[i].length());
    }
    body += m.tail(buffer, sizeof buffer);
    return body;
}

RangeRequest ranges(std::string_view field, std::uint64_t size = 1000) {
    return parse_ranges(field, size);
}

std::vector<ByteRange> list(const RangeRequest& r) {
    return {r.ranges, r.ranges + r.count};
}

using Kind = RangeRequest::Kind;

} // namespace

TEST_CASE("ranges: a single range in each form", "[files]") {
    RangeRequest r = ranges("bytes=0-99");
    REQUIRE(r.kind == Kind::partial);
    CHECK(list(r) == std::vector<ByteRange>{{0, 99}});
    CHECK(list(ranges("bytes=500-")) == std::vector<ByteRange>{{500, 999}});
    CHECK(list(ranges("bytes=-100")) == std::vector<ByteRange>{{900, 999}});
    CHECK(list(ranges("bytes=0-0")) == std::vector<ByteRange>{{0, 0}});
    CHECK(list(ranges("bytes=999-")) == std::vector<ByteRange>{{999, 999}});
    // The last position and the suffix are clipped to the file.
    CHECK(list(ranges("bytes=900-5000")) == std::vector<ByteRange>{{900, 999}});
    CHECK(list(ranges("bytes=-5000")) == std::vector<ByteRange>{{0, 999}});
    CHECK(list(ranges("bytes=0-99999999999999999999999")) == std::vector<ByteRange>{{0, 999}});
    // The unit is case-insensitive; whitespace may surround the elements.
    CHECK(list(ranges("Bytes=1-2")) == std::vector<ByteRange>{{1, 2}});
    CHECK(list(ranges("bytes= 1-2 ")) == std::vector<ByteRange>{{1, 2}});
    CHECK(ranges("bytes=10-19").ranges[0].length() == 10);
}

TEST_CASE("ranges: none inside the file is unsatisfiable", "[files]") {
    CHECK(ranges("bytes=1000-").kind == Kind::unsatisfiable);
    CHECK(ranges("bytes=1000-2000").kind == Kind::unsatisfiable);
    CHECK(ranges("bytes=-0").kind == Kind::unsatisfiable);
    CHECK(ranges("bytes=99999999999999999999999-").kind == Kind::unsatisfiable);
    CHECK(ranges("bytes=2000-3000, 4000-").kind == Kind::unsatisfiable);
    // One satisfiable range is enough; the others are dropped.
    const RangeRequest r = ranges("bytes=2000-3000,5-9");
    REQUIRE(r.kind == Kind::partial);
    CHECK(list(r) == std::vector<ByteRange>{{5, 9}});
}

TEST_CASE("ranges: malformed fields and other units are ignored (the whole file)", "[files]") {
    for (const char* field :
         {"", "bytes", "bytes=", "bytes=,", "bytes=a-b", "bytes=5", "bytes=10-5", "bytes=--5",
          "bytes=1-2-3", "bytes=-", "bytes=+1-2", "bytes=1 -2", "items=0-5", "bytes 0-5",
          "bytes=0-5,x", "bytes=0x10-20", "bytes=-1-2", "=0-5", "bytes0-5"}) {
        INFO(field);
        CHECK(ranges(field).kind == Kind::whole);
    }
    // An empty file has no byte to point at: ranges are ignored.
    CHECK(parse_ranges("bytes=0-", 0).kind == Kind::whole);
    CHECK(parse_ranges("bytes=-5", 0).kind == Kind::whole);
}

TEST_CASE("ranges: several, in the order asked, and abusive sets refused", "[files]") {
    RangeRequest r = ranges("bytes=0-9, 20-29,-10");
    REQUIRE(r.kind == Kind::partial);
    CHECK(list(r) == std::vector<ByteRange>{{0, 9}, {20, 29}, {990, 999}});
    r = ranges("bytes=500-599,0-9");
    CHECK(list(r) == std::vector<ByteRange>{{500, 599}, {0, 9}});
    // Empty list elements are allowed.
    CHECK(list(ranges("bytes=0-1,,3-4,")) == std::vector<ByteRange>{{0, 1}, {3, 4}});
    // Adjacent ranges are fine; overlapping ones get the whole file.
    CHECK(ranges("bytes=0-9,10-19").kind == Kind::partial);
    CHECK(ranges("bytes=0-9,9-19").kind == Kind::whole);
    CHECK(ranges("bytes=0-100,50-60").kind == Kind::whole);
    CHECK(ranges("bytes=0-0,0-0").kind == Kind::whole);
    CHECK(ranges("bytes=-100,950-").kind == Kind::whole);
    // 16 ranges pass, 17 do not.
    std::string field = "bytes=0-0";
    for (int i = 1; i < 16; ++i) field += "," + std::to_string(i * 2) + "-" + std::to_string(i * 2);
    CHECK(ranges(field).kind == Kind::partial);
    CHECK(ranges(field).count == 16);
    CHECK(ranges(field + ",100-100").kind == Kind::whole);
    // A malformed element spoils the whole set.
    CHECK(ranges("bytes=0-1,5-2").kind == Kind::whole);
}

TEST_CASE("ranges: Content-Range and the multipart/byteranges framing", "[files]") {
    char value[kContentRangeCapacity];
    CHECK(std::string_view(value, format_content_range({0, 99}, 1000, value)) == "0-99/1000");
    const ByteRange huge{18446744073709551613u, 18446744073709551614u};
    CHECK(std::string_view(value, format_content_range(huge, 18446744073709551615u, value)) ==
          "18446744073709551613-18446744073709551614/18446744073709551615");

    const std::string file = "0123456789abcdefghij";
    const Multipart m{"BOUNDARY", "text/plain; charset=utf-8", file.size()};
    const ByteRange parts[] = {{0, 2}, {15, 19}};
    const std::string expected = "\r\n--BOUNDARY\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                 "Content-Range: bytes 0-2/20\r\n\r\n012"
                                 "\r\n--BOUNDARY\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                 "Content-Range: bytes 15-19/20\r\n\r\nfghij"
                                 "\r\n--BOUNDARY--\r\n";
    CHECK(body_of(parts, 2, m, file) == expected);
    CHECK(m.body_length(parts, 2) == expected.size());

    char small[16];
    CHECK(m.part_head(parts[0], small, sizeof small) == 0);

    char a[kBoundaryLength], b[kBoundaryLength];
    make_boundary(a);
    make_boundary(b);
    CHECK(std::string_view(a, kBoundaryLength) != std::string_view(b, kBoundaryLength));
    for (const char c : a) CHECK(((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')));
}
