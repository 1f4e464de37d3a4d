// HTTP dates: IMF-fixdate written byte for byte; all three RFC 9110 forms
// read back; malformed and impossible dates refused.

#include "http/date.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <ctime>
#include <string>

using namespace weft::http;

namespace {

std::string formatted(std::time_t t) {
    char out[kHttpDateLength];
    format_http_date(t, out);
    return std::string(out, kHttpDateLength);
}

constexpr std::time_t kRfcExample = 784111777; // Sun, 06 Nov 1994 08:49:37 GMT

int current_year() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    return tm.tm_year + 1900;
}

} // namespace

TEST_CASE("dates: IMF-fixdate out", "[http]") {
    CHECK(formatted(0) == "Thu, 01 Jan 1970 00:00:00 GMT");
    CHECK(formatted(kRfcExample) == "Sun, 06 Nov 1994 08:49:37 GMT");
    CHECK(formatted(951782400) == "Tue, 29 Feb 2000 00:00:00 GMT");
    CHECK(formatted(1709251199) == "Thu, 29 Feb 2024 23:59:59 GMT");
    CHECK(formatted(4102444800) == "Fri, 01 Jan 2100 00:00:00 GMT");
}

TEST_CASE("dates: the three forms in", "[http]") {
    CHECK(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == kRfcExample);
    CHECK(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") == kRfcExample);
    CHECK(parse_http_date("Sun Nov  6 08:49:37 1994") == kRfcExample);
    CHECK(parse_http_date("Sun Nov 06 08:49:37 1994") == kRfcExample);
    CHECK(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT") == 0);
    CHECK(parse_http_date("Tue, 29 Feb 2000 00:00:00 GMT") == 951782400);
    CHECK(parse_http_date("Thu, 29 Feb 2024 23:59:59 GMT") == 1709251199);
    CHECK(parse_http_date("Thursday, 29-Feb-24 23:59:59 GMT") == 1709251199);
    CHECK(parse_http_date("Thu Feb 29 23:59:59 2024") == 1709251199);
}

TEST_CASE("dates: what is written reads back", "[http]") {
    for (std::time_t t = 0; t < 4102444800; t += 86400 * 37 + 3607) {
        const std::string text = formatted(t);
        INFO(text);
        CHECK(parse_http_date(text) == t);
    }
}

TEST_CASE("dates: a two-digit year is at most 50 years ahead", "[http]") {
    // RFC 9110 §5.6.7, relative to today, so the test moves with the clock.
    const int year = current_year();
    for (int ahead : {0, 1, 30, 49, 50, 51, 60, 99}) {
        const int target = year + ahead;
        const int expected = ahead > 50 ? target - 100 : target;
        char text[40];
        std::snprintf(text, sizeof text, "Monday, 01-Jan-%02d 00:00:00 GMT", target % 100);
        std::tm tm{};
        tm.tm_year = expected - 1900;
        tm.tm_mday = 1;
        INFO(text);
        CHECK(parse_http_date(text) == timegm(&tm));
    }
}

TEST_CASE("dates: malformed or impossible ones are refused", "[http]") {
    for (const char* text : {
             "",
             "Sun, 06 Nov 1994 08:49:37 UTC",
             "Sun, 06 Nov 1994 08:49:37 gmt",
             "Sun, 06 Nov 1994 08:49:37 GMT ",
             " Sun, 06 Nov 1994 08:49:37 GMT",
             "Sun, 6 Nov 1994 08:49:37 GMT",
             "Sun, 06 nov 1994 08:49:37 GMT",
             "Sun, 06 Nov 94 08:49:37 GMT",
             "Sun, 06 Nov 1994 8:49:37 GMT",
             "Sun, 06 Nov 1994 08:49 GMT",
             "Sun, 06 Nov 1994 24:00:00 GMT",
             "Sun, 06 Nov 1994 08:60:00 GMT",
             "Sun, 06 Nov 1994 08:49:61 GMT",
             "Sun, 00 Nov 1994 08:49:37 GMT",
             "Sun, 32 Jan 1994 08:49:37 GMT",
             "Sun, 31 Apr 1994 08:49:37 GMT",
             "Sun, 29 Feb 1900 08:49:37 GMT",
             "Sun, 29 Feb 1995 08:49:37 GMT",
             "Sun, 30 Feb 2000 08:49:37 GMT",
             "Sun, 06 Nov 1994 08-49-37 GMT",
             "Sun, 06 Nov 19x4 08:49:37 GMT",
             "Sunday, 06-Nov-1994 08:49:37 GMT",
             "Sunday, 06 Nov 94 08:49:37 GMT",
             "Sunday, 06-Nov-94 08:49:37 UTC",
             "Sunday, 31-Jun-94 08:49:37 GMT",
             "Sunday,06-Nov-94 08:49:37 GMT",
             "Sun Nov 6 08:49:37 1994",
             "Sun Nov  6 08:49:37 94",
             "Sun Nov 31 08:49:37 1994",
             "Sun Xyz  6 08:49:37 1994",
             "Sun Nov  6 08:49:37 1994 ",
             "1994-11-06T08:49:37Z",
             "784111777",
         }) {
        INFO(text);
        CHECK(parse_http_date(text) == std::nullopt);
    }
}

TEST_CASE("dates: the cached current date is now, as an IMF-fixdate", "[http]") {
    const std::time_t before = std::time(nullptr);
    const std::string_view now = current_http_date();
    REQUIRE(now.size() == kHttpDateLength);
    const std::optional<std::time_t> parsed = parse_http_date(now);
    REQUIRE(parsed);
    // The coarse clock may lag the precise one by a tick.
    CHECK(*parsed >= before - 1);
    CHECK(*parsed <= std::time(nullptr));
    CHECK(current_http_date().data() == now.data());
}
