// `limit_rate` values: rates a second and a minute, burst in both of
// nginx's spellings, nodelay, off, and what is refused with a reason.

#include "util/rate_limit.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <string_view>

using weft::RateLimit;

namespace {

RateLimit rate(std::string_view text) {
    std::string error;
    const std::optional<RateLimit> limit = RateLimit::parse(text, error);
    INFO(text << ": " << error);
    REQUIRE(limit);
    return *limit;
}

std::string refusal(std::string_view text) {
    std::string error;
    const std::optional<RateLimit> limit = RateLimit::parse(text, error);
    INFO(text);
    CHECK_FALSE(limit);
    CHECK_FALSE(error.empty());
    return error;
}

} // namespace

TEST_CASE("a rate a second drains its requests in milli-requests a minute", "[rate_limit]") {
    const RateLimit limit = rate("100r/s");
    CHECK(limit.per_minute == 6'000'000);
    CHECK(limit.burst == 0);
    CHECK_FALSE(limit.nodelay);
    CHECK_FALSE(limit.off());
}

TEST_CASE("a rate a minute is kept exact, not rounded to a second's", "[rate_limit]") {
    CHECK(rate("10r/m").per_minute == 10'000);
    CHECK(rate("1r/m").per_minute == 1'000);
}

TEST_CASE("burst and nodelay follow the rate, burst in either spelling", "[rate_limit]") {
    const RateLimit a = rate("5r/s burst 20 nodelay");
    CHECK(a.burst == 20);
    CHECK(a.nodelay);
    const RateLimit b = rate("  5r/s\tnodelay burst=20 ");
    CHECK(b == a);
    CHECK(rate("5r/s burst 0").burst == 0);
}

TEST_CASE("off is no limit", "[rate_limit]") {
    CHECK(rate("off").off());
    CHECK(refusal("off 5r/s").find("nothing after") != std::string::npos);
}

TEST_CASE("a rate reads back as it was written", "[rate_limit]") {
    for (const char* text : {"100r/s", "30r/m burst 5", "1r/s burst 1000000 nodelay", "off"})
        CHECK(rate(text).to_string() == text);
}

TEST_CASE("what is not a rate is refused with a reason naming it", "[rate_limit]") {
    CHECK(refusal("").find("expected a rate") != std::string::npos);
    CHECK(refusal("100").find("'100'") != std::string::npos);
    CHECK(refusal("100r/h").find("'100r/h'") != std::string::npos);
    CHECK(refusal("0r/s").find("from 1") != std::string::npos);
    CHECK(refusal("r/s").find("from 1") != std::string::npos);
    CHECK(refusal("1000001r/s").find("from 1") != std::string::npos);
    CHECK(refusal("-1r/s").find("from 1") != std::string::npos);
    CHECK(refusal("18446744073709551617r/s").find("from 1") != std::string::npos);
    CHECK(refusal("5r/s burst").find("burst") != std::string::npos);
    CHECK(refusal("5r/s burst x").find("'x'") != std::string::npos);
    CHECK(refusal("5r/s burst 1000001").find("burst") != std::string::npos);
    CHECK(refusal("5r/s burst 1 burst 2").find("once each") != std::string::npos);
    CHECK(refusal("5r/s nodelay nodelay").find("once each") != std::string::npos);
    CHECK(refusal("5r/s delay=3").find("two-stage") != std::string::npos);
    CHECK(refusal("5r/s fast").find("'fast'") != std::string::npos);
}
