// Validators and conditional requests: the strong ETag, If-Match,
// If-None-Match, If-(Un)Modified-Since and If-Range (files/conditions.hpp).

#include "handlers/files/conditions.hpp"
#include "http/date.hpp"
#include "http/request.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <ctime>
#include <string>

using namespace weft::handlers;

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
    const ConditionFields found(request);
    CHECK(found.conditional());
    CHECK(found.accept_encoding() == "br");
    const Conditions c = found.conditions();
    CHECK(c.range == "bytes=0-1");
    CHECK(c.if_none_match == "\"a\"");
    CHECK(c.if_modified_since == "d1");
    CHECK(c.if_unmodified_since == "d2");
    CHECK(c.if_match == "\"m\"");
    CHECK(c.if_range == "\"r\"");
    CHECK(c.accept_encoding == "br");

    const weft::http::Request empty;
    const ConditionFields none_found(empty);
    CHECK_FALSE(none_found.conditional());
    const Conditions none = none_found.conditions();
    CHECK(none.range.empty());
    CHECK(none.accept_encoding.empty());
}

namespace {

void add(weft::http::Request& request, std::string_view name, std::string_view value) {
    request.headers[request.header_count++] = {name, value};
}

} // namespace

TEST_CASE("condition fields: only a condition or a range makes a request conditional", "[files]") {
    weft::http::Request request;
    add(request, "Host", "a");
    add(request, "If-Matcg", "x"); // the length of one, not its name
    add(request, "Ranges", "x");
    CHECK_FALSE(ConditionFields(request).conditional());
    add(request, "Accept-Encoding", "br");
    const ConditionFields fields(request);
    CHECK_FALSE(fields.conditional());
    CHECK(fields.accept_encoding() == "br");
    const Conditions c = fields.conditions();
    CHECK((c.if_match.empty() && c.if_none_match.empty() && c.if_modified_since.empty() &&
           c.if_unmodified_since.empty() && c.if_range.empty() && c.range.empty()));
    add(request, "If-None-Match", "\"e\"");
    CHECK(ConditionFields(request).conditional());
}

TEST_CASE("condition fields: the first of a repeated field counts, unless empty", "[files]") {
    weft::http::Request request;
    add(request, "Range", "");
    add(request, "Range", "bytes=1-2");
    add(request, "Range", "bytes=3-4");
    add(request, "If-None-Match", "\"a\"");
    add(request, "If-None-Match", "\"b\"");
    const Conditions c = ConditionFields(request).conditions();
    CHECK(c.range == "bytes=1-2");
    CHECK(c.if_none_match == "\"a\"");
}
