// The files handler's pieces that need no connection: MIME types, the paths
// it refuses, byte ranges, validators and conditional requests, Accept-Encoding,
// listings, the small-file cache, and create()'s checks of its root.

#include "handlers/files/access.hpp"
#include "handlers/files/cache.hpp"
#include "handlers/files/conditions.hpp"
#include "handlers/files/encoding.hpp"
#include "handlers/files/handler.hpp"
#include "handlers/files/listing.hpp"
#include "handlers/files/ranges.hpp"
#include "http/date.hpp"
#include "http/mime.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace weft::handlers;
using weft::http::mime_type;

namespace {

// A fresh directory under the system's temporary one, removed at the end.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string name = (std::filesystem::temp_directory_path() / "weft-files-XXXXXX").string();
        REQUIRE(mkdtemp(name.data()) != nullptr);
        path = name;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    void write(const std::string& relative, const std::string& content) const {
        std::ofstream(path / relative, std::ios::binary) << content;
    }
};

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

// --- MIME types -------------------------------------------------------------

TEST_CASE("mime: common web types, text ones with a charset", "[files]") {
    CHECK(mime_type("/index.html") == "text/html; charset=utf-8");
    CHECK(mime_type("/a.htm") == "text/html; charset=utf-8");
    CHECK(mime_type("/s/site.css") == "text/css; charset=utf-8");
    CHECK(mime_type("app.js") == "text/javascript; charset=utf-8");
    CHECK(mime_type("mod.mjs") == "text/javascript; charset=utf-8");
    CHECK(mime_type("notes.txt") == "text/plain; charset=utf-8");
    CHECK(mime_type("data.json") == "application/json");
    CHECK(mime_type("logo.svg") == "image/svg+xml");
    CHECK(mime_type("a.png") == "image/png");
    CHECK(mime_type("a.jpg") == "image/jpeg");
    CHECK(mime_type("a.jpeg") == "image/jpeg");
    CHECK(mime_type("a.webp") == "image/webp");
    CHECK(mime_type("a.avif") == "image/avif");
    CHECK(mime_type("f.woff2") == "font/woff2");
    CHECK(mime_type("v.mp4") == "video/mp4");
    CHECK(mime_type("m.wasm") == "application/wasm");
    CHECK(mime_type("site.webmanifest") == "application/manifest+json");
    CHECK(mime_type("a.tar.gz") == "application/gzip");
    CHECK(mime_type("doc.pdf") == "application/pdf");
}

TEST_CASE("mime: extensions are case-insensitive, unknown ones are octet-stream", "[files]") {
    CHECK(mime_type("/A.HTML") == "text/html; charset=utf-8");
    CHECK(mime_type("x.Css") == "text/css; charset=utf-8");
    CHECK(mime_type("x.PnG") == "image/png");
    const std::string_view unknown = "application/octet-stream";
    CHECK(mime_type("README") == unknown);
    CHECK(mime_type("archive.xyz") == unknown);
    CHECK(mime_type("trailing.") == unknown);
    CHECK(mime_type("/dir.d/README") == unknown); // the dot is the directory's
    CHECK(mime_type("x.htmlx") == unknown);
    CHECK(mime_type("x.averyveryverylongextension") == unknown);
    CHECK(mime_type("") == unknown);
}

// --- paths refused -----------------------------------------------------------

TEST_CASE("access: any segment starting with a dot is refused", "[files]") {
    CHECK(has_dot_segment("/.env"));
    CHECK(has_dot_segment("/.git/config"));
    CHECK(has_dot_segment("/a/.htaccess"));
    CHECK(has_dot_segment("/a/.hidden/"));
    CHECK(has_dot_segment("/a/b/.x"));
    CHECK_FALSE(has_dot_segment("/"));
    CHECK_FALSE(has_dot_segment("/index.html"));
    CHECK_FALSE(has_dot_segment("/a.b/c.d"));
    CHECK_FALSE(has_dot_segment("/a/b./c"));
    CHECK_FALSE(has_dot_segment("/well-known./x"));
}

TEST_CASE("access: deny prefixes match whole segments", "[files]") {
    CHECK(is_beneath("/private", "/private"));
    CHECK(is_beneath("/private/", "/private"));
    CHECK(is_beneath("/private/x/y", "/private"));
    CHECK_FALSE(is_beneath("/privateer", "/private"));
    CHECK_FALSE(is_beneath("/privat", "/private"));
    CHECK_FALSE(is_beneath("/public/private", "/private"));
    CHECK(is_beneath("/a/b", "/a/b"));
    CHECK_FALSE(is_beneath("/a/bc", "/a/b"));
    CHECK(is_beneath("/anything", "/"));
    CHECK(is_beneath("/", "/"));
}

// --- byte ranges --------------------------------------------------------------

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

// --- validators and conditions ------------------------------------------------

namespace {

struct stat stat_of(std::uint64_t inode, std::uint64_t size, std::time_t sec, long nsec) {
    struct stat st {};
    st.st_ino = inode;
    st.st_size = static_cast<off_t>(size);
    st.st_mtim.tv_sec = sec;
    st.st_mtim.tv_nsec = nsec;
    return st;
}

std::string etag_of(const struct stat& st) {
    char out[kEtagCapacity];
    return {out, format_etag(st, out)};
}

std::string date(std::time_t t) {
    char out[weft::http::kHttpDateLength];
    weft::http::format_http_date(t, out);
    return {out, sizeof out};
}

} // namespace

TEST_CASE("etag: strong, quoted, from inode, size, mtime and ctime in ns", "[files]") {
    CHECK(etag_of(stat_of(0x1234, 1024, 1, 5)) == "\"1234-400-3b9aca05-0\"");
    struct stat touched = stat_of(1, 1, 1, 0);
    touched.st_ctim.tv_nsec = 1; // rewritten, its mtime put back
    CHECK(etag_of(stat_of(1, 1, 1, 0)) != etag_of(touched));
    CHECK(etag_of(stat_of(1, 1, 1, 0)) != etag_of(stat_of(1, 1, 1, 1)));
    CHECK(etag_of(stat_of(1, 1, 1, 0)) != etag_of(stat_of(2, 1, 1, 0)));
    CHECK(etag_of(stat_of(1, 1, 1, 0)) != etag_of(stat_of(1, 2, 1, 0)));
    struct stat wide = stat_of(~0ull, ~0ull >> 1, 0x7fffffff, 999999999);
    wide.st_ctim = wide.st_mtim;
    const std::string widest = etag_of(wide);
    CHECK(widest.size() <= kEtagCapacity);
}

TEST_CASE("etag: list matching, weak and strong", "[files]") {
    const std::string_view tag = "\"abc\"";
    CHECK(etag_matches("\"abc\"", tag, Comparison::weak));
    CHECK(etag_matches("\"abc\"", tag, Comparison::strong));
    CHECK(etag_matches("W/\"abc\"", tag, Comparison::weak));
    CHECK_FALSE(etag_matches("W/\"abc\"", tag, Comparison::strong));
    CHECK(etag_matches("*", tag, Comparison::weak));
    CHECK(etag_matches("\"x\", \"y\" ,\"abc\"", tag, Comparison::weak));
    CHECK(etag_matches("\"x\",W/\"abc\"", tag, Comparison::weak));
    CHECK(etag_matches("\"a,b\", \"abc\"", tag, Comparison::weak)); // a comma inside a tag
    CHECK_FALSE(etag_matches("\"abcd\"", tag, Comparison::weak));
    CHECK_FALSE(etag_matches("abc", tag, Comparison::weak)); // unquoted
    CHECK_FALSE(etag_matches("\"abc", tag, Comparison::weak));
    CHECK_FALSE(etag_matches("", tag, Comparison::weak));
    CHECK_FALSE(etag_matches("w/\"abc\"", tag, Comparison::weak)); // W is case-sensitive
    CHECK(etag_matches("junk, \"abc\"", tag, Comparison::weak));
}

TEST_CASE("conditions: If-None-Match and If-Modified-Since give 304", "[files]") {
    const std::string etag = "\"e\"";
    const std::time_t modified = 1'700'000'000;
    Conditions c;
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);

    c.if_none_match = "W/\"e\"";
    CHECK(evaluate(c, etag, modified) == Verdict::not_modified);
    c.if_none_match = "\"other\"";
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);

    // If-None-Match takes precedence: a matching date does not give 304.
    const std::string later = date(modified + 10), earlier = date(modified - 10),
                      same = date(modified);
    c.if_modified_since = later;
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);

    c.if_none_match = {};
    CHECK(evaluate(c, etag, modified) == Verdict::not_modified);
    c.if_modified_since = same;
    CHECK(evaluate(c, etag, modified) == Verdict::not_modified);
    c.if_modified_since = earlier;
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);
    c.if_modified_since = "yesterday";
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);
    // The obsolete date forms count too.
    c.if_modified_since = "Sunday, 06-Nov-94 08:49:37 GMT";
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);
    c.if_modified_since = "Sun Nov  6 08:49:37 2033";
    CHECK(evaluate(c, etag, modified) == Verdict::not_modified);
}

TEST_CASE("conditions: If-Match and If-Unmodified-Since give 412", "[files]") {
    const std::string etag = "\"e\"";
    const std::time_t modified = 1'700'000'000;
    Conditions c;
    c.if_match = "\"e\"";
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);
    c.if_match = "W/\"e\""; // If-Match compares strongly
    CHECK(evaluate(c, etag, modified) == Verdict::precondition_failed);
    c.if_match = "*";
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);

    c.if_match = {};
    const std::string earlier = date(modified - 1), same = date(modified);
    c.if_unmodified_since = earlier;
    CHECK(evaluate(c, etag, modified) == Verdict::precondition_failed);
    c.if_unmodified_since = same;
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);
    c.if_unmodified_since = "garbage";
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);
    // If-Match, when present, makes If-Unmodified-Since irrelevant.
    c.if_unmodified_since = earlier;
    c.if_match = "\"e\"";
    CHECK(evaluate(c, etag, modified) == Verdict::proceed);
    // 412 before 304.
    c.if_match = "\"nope\"";
    c.if_none_match = "\"e\"";
    CHECK(evaluate(c, etag, modified) == Verdict::precondition_failed);
}

TEST_CASE("conditions: If-Range by strong tag or exact date", "[files]") {
    const std::string etag = "\"e\"";
    const std::time_t modified = 1'700'000'000;
    CHECK(range_allowed({}, etag, modified));
    CHECK(range_allowed("\"e\"", etag, modified));
    CHECK_FALSE(range_allowed("\"f\"", etag, modified));
    CHECK_FALSE(range_allowed("W/\"e\"", etag, modified));
    CHECK(range_allowed(date(modified), etag, modified));
    CHECK_FALSE(range_allowed(date(modified + 1), etag, modified));
    CHECK_FALSE(range_allowed(date(modified - 1), etag, modified));
    CHECK_FALSE(range_allowed("not a date", etag, modified));
}

TEST_CASE("conditions: the fields are found in one pass, by any case, first one kept", "[files]") {
    weft::http::Request request;
    const std::pair<std::string_view, std::string_view> fields[] = {
        {"Host", "x"},
        // Near misses, at each position of the word-wise comparison.
        {"Rangf", "no"},
        {"Xccept-Encoding", "no"},
        {"Accept-Encodinf", "no"},
        {"If-None-Matcx", "no"},
        {"If-Modified-Sinc_", "no"},
        {"If-Unmodified-Sincd", "no"},
        {"If-Matcg", "no"},
        {"range", "bytes=0-1"},
        {"IF-NONE-MATCH", "\"a\""},
        {"If-Modified-Since", "d1"},
        {"If-Unmodified-Since", "d2"},
        {"If-Match", "\"m\""},
        {"If-Range", "\"r\""},
        {"Accept-Encoding", "br"},
        {"Accept-Encoding", "gzip"},
        {"X-Range", "no"},
        {"Rangee", "no"},
    };
    for (const auto& [name, value] : fields)
        request.headers[request.header_count++] = {name, value};
    const Conditions c = read_conditions(request);
    CHECK(c.range == "bytes=0-1");
    CHECK(c.if_none_match == "\"a\"");
    CHECK(c.if_modified_since == "d1");
    CHECK(c.if_unmodified_since == "d2");
    CHECK(c.if_match == "\"m\"");
    CHECK(c.if_range == "\"r\"");
    CHECK(c.accept_encoding == "br");

    const Conditions none = read_conditions(weft::http::Request{});
    CHECK(none.range.empty());
    CHECK(none.accept_encoding.empty());
}

// --- Accept-Encoding ------------------------------------------------------------

namespace {
std::vector<Encoding> twins(std::string_view field) {
    const TwinOrder order = twin_order(field);
    return {order.twins, order.twins + order.count};
}
using E = Encoding;
} // namespace

TEST_CASE("encoding: which twins a client takes, best first", "[files]") {
    CHECK(twins("").empty());
    CHECK(twins("identity").empty());
    CHECK(twins("deflate").empty());
    CHECK(twins("gzip") == std::vector<E>{E::gzip});
    CHECK(twins("x-gzip") == std::vector<E>{E::gzip});
    CHECK(twins("br") == std::vector<E>{E::br});
    CHECK(twins("gzip, deflate, br") == std::vector<E>{E::br, E::gzip});
    CHECK(twins("GZIP, BR") == std::vector<E>{E::br, E::gzip});
    // q=0 disables; the higher q comes first; a tie goes to br.
    CHECK(twins("gzip, br;q=0") == std::vector<E>{E::gzip});
    CHECK(twins("br;q=0.0, gzip;q=0.000") == std::vector<E>{});
    CHECK(twins("br;q=0.5, gzip;q=0.8") == std::vector<E>{E::gzip, E::br});
    CHECK(twins("br;q=0.8, gzip;q=0.8") == std::vector<E>{E::br, E::gzip});
    CHECK(twins("gzip ; q=1 , br ; Q=0.001") == std::vector<E>{E::gzip, E::br});
    // "*" stands for what is not named.
    CHECK(twins("*") == std::vector<E>{E::br, E::gzip});
    CHECK(twins("*;q=0") == std::vector<E>{});
    CHECK(twins("gzip, *;q=0") == std::vector<E>{E::gzip});
    CHECK(twins("br;q=0, *") == std::vector<E>{E::gzip});
    // A q-value that does not parse discards its element.
    CHECK(twins("br;q=2, gzip") == std::vector<E>{E::gzip});
    CHECK(twins("br;q=0.5000") == std::vector<E>{});
    CHECK(twins("br;q=abc") == std::vector<E>{});
    CHECK(twins("br;q=1.001") == std::vector<E>{});
    CHECK(twins("br;level=5") == std::vector<E>{E::br});

    CHECK(twin_suffix(E::br) == ".br");
    CHECK(twin_suffix(E::gzip) == ".gz");
    CHECK(twin_suffix(E::identity).empty());
    CHECK(content_coding(E::br) == "br");
    CHECK(content_coding(E::gzip) == "gzip");
}

// --- listings --------------------------------------------------------------------

TEST_CASE("listing: escaped names, encoded hrefs, directories with a slash", "[files]") {
    std::vector<ListingEntry> entries(4);
    entries[0] = {"<script>&\"'.txt", ListingEntry::Type::file, 12, 0};
    entries[1] = {"a b:c#d?e%f", ListingEntry::Type::directory, 0, 0};
    entries[2] = {"caf\xc3\xa9", ListingEntry::Type::file, 7, 86400};
    entries[3] = {"link", ListingEntry::Type::other, 0, 0};
    const std::string page = render_listing("/a&b/<x>/", entries);

    CHECK(page.find("<title>Index of /a&amp;b/&lt;x&gt;/</title>") != std::string::npos);
    CHECK(page.find("<a href=\"%3Cscript%3E%26%22%27.txt\">&lt;script&gt;&amp;&quot;&#39;.txt</a>"
                    "</td><td>12</td>") != std::string::npos);
    CHECK(page.find("<a href=\"a%20b%3Ac%23d%3Fe%25f/\">a b:c#d?e%f/</a></td><td>-</td>") !=
          std::string::npos);
    CHECK(page.find("<a href=\"caf%C3%A9\">caf\xc3\xa9</a></td><td>7</td><td>1970-01-02 00:00") !=
          std::string::npos);
    CHECK(page.find("<a href=\"link\">link</a></td><td>-</td>") != std::string::npos);
    CHECK(page.find("<a href=\"../\">") != std::string::npos);
    // No raw markup from a name anywhere.
    CHECK(page.find("<script") == std::string::npos);

    CHECK(render_listing("/", {}).find("../") == std::string::npos);

    std::string encoded;
    append_percent_encoded(encoded, "/a b/c~d_e.f-g/", true);
    CHECK(encoded == "/a%20b/c~d_e.f-g/");
    encoded.clear();
    append_percent_encoded(encoded, "/a\r\n", false);
    CHECK(encoded == "%2Fa%0D%0A");
}

TEST_CASE("listing: a directory's entries, sorted, dotfiles hidden, links not followed",
          "[files]") {
    TempDir dir;
    dir.write("b.txt", "12345");
    dir.write("a.txt", "1");
    dir.write(".env", "SECRET=1");
    std::filesystem::create_directory(dir.path / "sub");
    std::filesystem::create_directory(dir.path / ".git");
    std::filesystem::create_symlink("/etc/passwd", dir.path / "passwd");

    std::vector<ListingEntry> entries;
    const int fd = open(dir.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(read_listing(fd, entries) == 0);
    REQUIRE(entries.size() == 4);
    CHECK(entries[0].name == "a.txt");
    CHECK(entries[0].type == ListingEntry::Type::file);
    CHECK(entries[0].size == 1);
    CHECK(entries[1].name == "b.txt");
    CHECK(entries[1].size == 5);
    CHECK(entries[2].name == "passwd");
    CHECK(entries[2].type == ListingEntry::Type::other);
    CHECK(entries[3].name == "sub");
    CHECK(entries[3].type == ListingEntry::Type::directory);
    CHECK(entries[0].modified > 0);
}

// --- the small-file cache -----------------------------------------------------------

namespace {
CachedFile file_of(std::string body) {
    CachedFile file;
    file.body = std::move(body);
    file.stamp.size = file.body.size();
    return file;
}
} // namespace

TEST_CASE("cache: keyed by path and encoding, and an entry replaced", "[files]") {
    FileCache cache(1 << 20);
    CHECK(cache.find("/a", E::identity) == nullptr);
    REQUIRE(cache.insert("/a", E::identity, file_of("plain")) != nullptr);
    REQUIRE(cache.insert("/a", E::br, file_of("brotli")) != nullptr);
    CachedFile absent;
    absent.absent = true;
    REQUIRE(cache.insert("/a", E::gzip, std::move(absent)) != nullptr);
    CHECK(cache.size() == 3);
    CHECK(cache.find("/a", E::identity)->body == "plain");
    CHECK(cache.find("/a", E::br)->body == "brotli");
    CHECK(cache.find("/a", E::gzip)->absent);
    CHECK(cache.find("/a/", E::identity) == nullptr);

    cache.insert("/a", E::identity, file_of("new"));
    CHECK(cache.size() == 3);
    CHECK(cache.find("/a", E::identity)->body == "new");
    cache.erase("/a", E::br);
    CHECK(cache.find("/a", E::br) == nullptr);
    CHECK(cache.size() == 2);
    CHECK(cache.bytes() == 3 + 2 * 2 + 2 * FileCache::kEntryOverhead); // bodies, keys
}

TEST_CASE("cache: bounded in bytes, the least recently used go first", "[files]") {
    const std::size_t entry = 1000 + 2 + FileCache::kEntryOverhead;
    FileCache cache(3 * entry);
    const std::string k(1000, 'x');
    cache.insert("/1", E::identity, file_of(k));
    cache.insert("/2", E::identity, file_of(k));
    cache.insert("/3", E::identity, file_of(k));
    CHECK(cache.bytes() == 3 * entry);
    REQUIRE(cache.find("/1", E::identity) != nullptr); // /2 is now the oldest
    cache.insert("/4", E::identity, file_of(k));
    CHECK(cache.bytes() <= 3 * entry);
    CHECK(cache.find("/2", E::identity) == nullptr);
    CHECK(cache.find("/1", E::identity) != nullptr);
    CHECK(cache.find("/3", E::identity) != nullptr);
    CHECK(cache.find("/4", E::identity) != nullptr);
    // Too big alone: refused, and nothing evicted for it.
    CHECK(cache.insert("/big", E::identity, file_of(std::string(3 * entry, 'y'))) == nullptr);
    CHECK(cache.size() == 3);
    // Many evictions in a row keep the list and the count consistent.
    for (int i = 0; i < 100; ++i)
        cache.insert("/n" + std::to_string(i), E::identity, file_of(std::string(100, 'z')));
    CHECK(cache.bytes() <= 3 * entry);
    CHECK(cache.find("/n99", E::identity) != nullptr);
    CHECK(cache.find("/4", E::identity) == nullptr);
}

TEST_CASE("cache: many entries, erased from the middle of probe runs", "[files]") {
    FileCache cache(64 << 20);
    const auto key = [](int i) { return "/f/" + std::to_string(i); };
    for (int i = 0; i < 2000; ++i) {
        const Encoding e = i % 3 == 0 ? E::identity : i % 3 == 1 ? E::gzip : E::br;
        REQUIRE(cache.insert(key(i), e, file_of(std::to_string(i))) != nullptr);
    }
    CHECK(cache.size() == 2000);
    for (int i = 0; i < 2000; i += 2) {
        const Encoding e = i % 3 == 0 ? E::identity : i % 3 == 1 ? E::gzip : E::br;
        cache.erase(key(i), e);
    }
    CHECK(cache.size() == 1000);
    for (int i = 0; i < 2000; ++i) {
        const Encoding e = i % 3 == 0 ? E::identity : i % 3 == 1 ? E::gzip : E::br;
        const CachedFile* file = cache.find(key(i), e);
        INFO(i);
        if (i % 2 == 0) {
            CHECK(file == nullptr);
        } else {
            REQUIRE(file != nullptr);
            CHECK(file->body == std::to_string(i));
            CHECK(cache.find(key(i), e == E::br ? E::gzip : E::br) == nullptr);
        }
    }
}

TEST_CASE("cache: a pinned entry outlives its eviction until unpinned", "[files]") {
    FileCache cache(2 * (1000 + 2 + FileCache::kEntryOverhead));
    CachedFile* sending = cache.insert("/a", E::identity, file_of(std::string(1000, 'a')));
    REQUIRE(sending != nullptr);
    {
        const FilePin pin(cache, *sending);
        // Replaced, then the replacement evicted: the pinned bytes stay.
        cache.insert("/a", E::identity, file_of(std::string(1000, 'b')));
        cache.insert("/b", E::identity, file_of(std::string(1000, 'c')));
        cache.insert("/c", E::identity, file_of(std::string(1000, 'd')));
        CHECK(cache.find("/a", E::identity) == nullptr);
        CHECK(cache.retired() == 1);
        CHECK(sending->body == std::string(1000, 'a')); // ASan would see a use after free
        const FilePin again(cache, *sending);
    }
    CHECK(cache.retired() == 0);
    // An entry pinned and unpinned while in the table stays in it.
    CachedFile* c = cache.find("/c", E::identity);
    REQUIRE(c != nullptr);
    { const FilePin pin(cache, *c); }
    CHECK(cache.find("/c", E::identity) == c);
    CHECK(cache.retired() == 0);
}

TEST_CASE("cache: a stamp tells versions of a file apart", "[files]") {
    struct stat a = stat_of(7, 100, 1000, 1);
    a.st_dev = 3;
    struct stat b = a;
    CHECK(FileStamp::of(a) == FileStamp::of(b));
    b.st_mtim.tv_nsec = 2;
    CHECK_FALSE(FileStamp::of(a) == FileStamp::of(b));
    b = a;
    b.st_dev = 4;
    CHECK_FALSE(FileStamp::of(a) == FileStamp::of(b));
    b = a;
    b.st_size = 101;
    CHECK_FALSE(FileStamp::of(a) == FileStamp::of(b));
    b = a;
    b.st_ctim.tv_nsec = 9; // rewritten, its mtime put back
    CHECK_FALSE(FileStamp::of(a) == FileStamp::of(b));
}

// --- create() ------------------------------------------------------------------------

TEST_CASE("create: the root must be a directory that opens", "[files]") {
    TempDir dir;
    dir.write("file", "x");
    weft::config::FilesHandler config;
    config.prefix = "/static";
    std::string error;

    config.root = (dir.path / "missing").string();
    CHECK(FilesHandler::create(config, "", error) == nullptr);
    CHECK(error ==
          "files /static: cannot open the root " + config.root + ": No such file or directory");

    config.root = (dir.path / "file").string();
    CHECK(FilesHandler::create(config, "", error) == nullptr);
    CHECK(error.find("Not a directory") != std::string::npos);

    config.root = "";
    CHECK(FilesHandler::create(config, "", error) == nullptr);
    CHECK(error == "files /static: no root: set one in the handler or its site");

    // The site's root when the handler has none.
    error.clear();
    const auto handler = FilesHandler::create(config, dir.path.string(), error);
    REQUIRE(handler != nullptr);
    CHECK(error.empty());
    CHECK(handler->prefix() == "/static");
}
