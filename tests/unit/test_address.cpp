// Addresses as the configuration and the command line write them.

#include "util/address.hpp"

#include <catch2/catch.hpp>

using weft::Address;

namespace {
std::string round_trip(std::string_view text) {
    std::string error;
    auto a = Address::parse(text, error);
    INFO(error);
    REQUIRE(a);
    return a->to_string();
}
std::string refusal(std::string_view text) {
    std::string error;
    REQUIRE_FALSE(Address::parse(text, error));
    return error;
}
} // namespace

TEST_CASE("addresses parse and print back", "[address]") {
    CHECK(round_trip("127.0.0.1:8080") == "127.0.0.1:8080");
    CHECK(round_trip("*:80") == "0.0.0.0:80");
    CHECK(round_trip("[::1]:8080") == "[::1]:8080");
    CHECK(round_trip("[::]:443") == "[::]:443");
    CHECK(round_trip("unix:/run/weft.sock") == "unix:/run/weft.sock");
    CHECK(round_trip("10.1.2.3:0") == "10.1.2.3:0");

    std::string error;
    auto v6 = Address::parse("[::1]:8080", error);
    CHECK(v6->kind() == Address::Kind::ipv6);
    CHECK(v6->port() == 8080);
    auto un = Address::parse("unix:/tmp/x.sock", error);
    CHECK(un->kind() == Address::Kind::unix_path);
    CHECK(un->path() == "/tmp/x.sock");
    CHECK(un->port() == 0);
}

TEST_CASE("bad addresses are refused with a reason", "[address]") {
    CHECK(refusal("8080") == "expected host:port, [v6]:port or unix:/path, not '8080'");
    CHECK(refusal("127.0.0.1:") == "bad port '' (0-65535)");
    CHECK(refusal("127.0.0.1:65536") == "bad port '65536' (0-65535)");
    CHECK(refusal("127.0.0.1:80x") == "bad port '80x' (0-65535)");
    CHECK(refusal("localhost:80") == "bad IPv4 address 'localhost' (numeric, or * for any)");
    CHECK(refusal("::1:80") == "bad IPv4 address '::1' (numeric, or * for any)");
    CHECK(refusal("[::1:80") == "an IPv6 address is written [addr]:port");
    CHECK(refusal("[fe80::zz]:80") == "bad IPv6 address 'fe80::zz'");
    CHECK(refusal("unix:") == "a unix address needs a path: unix:/run/weft.sock");
    CHECK(refusal("unix:/" + std::string(200, 'a')) == "unix socket path longer than 107 bytes");
}
