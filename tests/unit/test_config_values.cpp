// The configuration's typed values, each accepted form and each error.

#include "config/values.hpp"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using namespace weft::config;

namespace {
template <class Parse>
std::string refusal(Parse parse, std::string_view text) {
    std::string error;
    REQUIRE_FALSE(parse(text, error));
    return error;
}
} // namespace

TEST_CASE("durations: ms, s, m, h, and a bare number is seconds", "[config]") {
    std::string error;
    CHECK(parse_duration("250ms", error) == 250ms);
    CHECK(parse_duration("15s", error) == 15s);
    CHECK(parse_duration("2m", error) == 2min);
    CHECK(parse_duration("1h", error) == 1h);
    CHECK(parse_duration("7d", error) == 7 * 24h);
    CHECK(parse_duration("10", error) == 10s);
    CHECK(parse_duration("0", error) == 0ms);

    const std::string hint = "expected a duration such as 250ms, 15s, 2m, 1h or 7d, not ";
    CHECK(refusal(parse_duration, "") == hint + "''");
    CHECK(refusal(parse_duration, "fast") == hint + "'fast'");
    CHECK(refusal(parse_duration, "15 s") == hint + "'15 s'");
    CHECK(refusal(parse_duration, "1.5s") == hint + "'1.5s'");
    CHECK(refusal(parse_duration, "-1s") == hint + "'-1s'");
    CHECK(refusal(parse_duration, "3w") == hint + "'3w'");
    CHECK(refusal(parse_duration, "15S") == hint + "'15S'");
    CHECK(refusal(parse_duration, "9999999999999999h") ==
          "duration '9999999999999999h' is too long");
    CHECK(refusal(parse_duration, "99999999999999999999") ==
          "duration '99999999999999999999' is too long");
}

TEST_CASE("sizes: bytes, K, M, G in powers of 1024", "[config]") {
    std::string error;
    CHECK(parse_size("512", error) == 512u);
    CHECK(parse_size("16K", error) == 16u * 1024);
    CHECK(parse_size("16k", error) == 16u * 1024);
    CHECK(parse_size("1M", error) == 1u << 20);
    CHECK(parse_size("1G", error) == 1ull << 30);
    CHECK(parse_size("0", error) == 0u);

    const std::string hint = "expected a size such as 512, 16K, 1M or 1G, not ";
    CHECK(refusal(parse_size, "") == hint + "''");
    CHECK(refusal(parse_size, "big") == hint + "'big'");
    CHECK(refusal(parse_size, "16KB") == hint + "'16KB'");
    CHECK(refusal(parse_size, "1T") == hint + "'1T'");
    CHECK(refusal(parse_size, "-5") == hint + "'-5'");
    CHECK(refusal(parse_size, "99999999999999G") == "size '99999999999999G' is too large");
    CHECK(refusal(parse_size, "99999999999999999999") ==
          "size '99999999999999999999' is too large");
}

TEST_CASE("booleans: on/off, true/false, yes/no", "[config]") {
    std::string error;
    for (const char* yes : {"on", "true", "yes"}) CHECK(parse_bool(yes, error) == true);
    for (const char* no : {"off", "false", "no"}) CHECK(parse_bool(no, error) == false);
    CHECK(refusal(parse_bool, "maybe") ==
          "expected on or off (or true/false, yes/no), not 'maybe'");
    CHECK(refusal(parse_bool, "1") == "expected on or off (or true/false, yes/no), not '1'");
}

TEST_CASE("lists are split on spaces and tabs", "[config]") {
    CHECK(split_list("/data /conf") == std::vector<std::string_view>{"/data", "/conf"});
    CHECK(split_list("  a\t b   c ") == std::vector<std::string_view>{"a", "b", "c"});
    CHECK(split_list("").empty());
    CHECK(split_list(" \t ").empty());
}
