// Address blocks and allow/deny lists: strict parsing (prefix bounds, no
// host bits), IPv4 and IPv6, IPv4-mapped clients, first match wins, and no
// allocation when a list is matched.

#include "util/cidr.hpp"

#include "allocation_count.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <optional>
#include <string>
#include <string_view>

using namespace weft;

namespace {

Cidr block(std::string_view text) {
    std::string error;
    std::optional<Cidr> cidr = Cidr::parse(text, error);
    INFO(text << ": " << error);
    REQUIRE(cidr);
    return *cidr;
}

std::string refusal(std::string_view text) {
    std::string error;
    const std::optional<Cidr> cidr = Cidr::parse(text, error);
    INFO(text);
    CHECK_FALSE(cidr);
    return error;
}

IpAddress address(std::string_view text) {
    const std::optional<IpAddress> parsed = IpAddress::parse(text);
    INFO(text);
    REQUIRE(parsed);
    return *parsed;
}

AccessRules rules(std::initializer_list<std::pair<bool, std::string_view>> lines) {
    AccessRules out;
    for (const auto& [allow, list] : lines) {
        std::string error;
        INFO(list);
        REQUIRE(out.add(allow, list, error));
    }
    return out;
}

} // namespace

TEST_CASE("cidr/ipv4 blocks and addresses", "[util]") {
    const Cidr ten = block("10.0.0.0/8");
    CHECK(ten.family() == IpAddress::Family::ipv4);
    CHECK(ten.prefix() == 8);
    CHECK(ten.contains(address("10.0.0.0")));
    CHECK(ten.contains(address("10.255.3.4")));
    CHECK_FALSE(ten.contains(address("11.0.0.0")));
    CHECK_FALSE(ten.contains(address("9.255.255.255")));
    CHECK(ten.to_string() == "10.0.0.0/8");

    const Cidr one = block("127.0.0.1");
    CHECK(one.prefix() == 32);
    CHECK(one.contains(address("127.0.0.1")));
    CHECK_FALSE(one.contains(address("127.0.0.2")));
    CHECK(one.to_string() == "127.0.0.1");
    CHECK(block("127.0.0.1/32") == one);

    const Cidr any = block("0.0.0.0/0");
    CHECK(any.contains(address("1.2.3.4")));
    CHECK(any.contains(address("255.255.255.255")));
    CHECK_FALSE(any.contains(address("::1"))); // an IPv4 block holds no IPv6 client

    const Cidr odd = block("192.168.4.0/22");
    CHECK(odd.contains(address("192.168.7.255")));
    CHECK_FALSE(odd.contains(address("192.168.8.0")));
}

TEST_CASE("cidr/ipv6 blocks", "[util]") {
    const Cidr doc = block("2001:db8::/32");
    CHECK(doc.family() == IpAddress::Family::ipv6);
    CHECK(doc.contains(address("2001:db8:ffff::1")));
    CHECK_FALSE(doc.contains(address("2001:db9::1")));
    CHECK_FALSE(doc.contains(address("32.1.13.184"))); // the same first bytes, IPv4
    CHECK(doc.to_string() == "2001:db8::/32");

    const Cidr loopback = block("::1");
    CHECK(loopback.prefix() == 128);
    CHECK(loopback.contains(address("::1")));
    CHECK(loopback.contains(address("0:0:0:0:0:0:0:1")));
    CHECK_FALSE(loopback.contains(address("::2")));

    // A prefix that ends in the second half, and one inside a byte.
    const Cidr deep = block("2001:db8:0:0:8000::/65");
    CHECK(deep.contains(address("2001:db8::ffff:0:0:1")));
    CHECK_FALSE(deep.contains(address("2001:db8::7fff:0:0:1")));
    const Cidr link = block("fe80::/10");
    CHECK(link.contains(address("febf::1")));
    CHECK_FALSE(link.contains(address("fec0::1")));

    CHECK(block("::/0").contains(address("ffff::1")));
    CHECK_FALSE(block("::/0").contains(address("127.0.0.1")));
    CHECK(block("2001:DB8::/32") == doc); // hex in any case
}

TEST_CASE("cidr/ipv4-mapped ipv6 is ipv4", "[util]") {
    // A client of an IPv6 socket that came over IPv4.
    const IpAddress mapped = address("::ffff:10.1.2.3");
    CHECK(mapped.family == IpAddress::Family::ipv4);
    CHECK(mapped == address("10.1.2.3"));
    CHECK(block("10.0.0.0/8").contains(mapped));

    sockaddr_in6 six{};
    six.sin6_family = AF_INET6;
    REQUIRE(inet_pton(AF_INET6, "::ffff:192.168.1.1", &six.sin6_addr) == 1);
    const IpAddress peer = IpAddress::of(reinterpret_cast<const sockaddr*>(&six));
    CHECK(peer.family == IpAddress::Family::ipv4);
    CHECK(block("192.168.1.0/24").contains(peer));
    CHECK_FALSE(block("::/0").contains(peer));

    // A rule written mapped is the IPv4 block it covers ...
    CHECK(block("::ffff:10.0.0.0/104") == block("10.0.0.0/8"));
    CHECK(block("::ffff:10.0.0.0/104").to_string() == "10.0.0.0/8");
    // ... and one wider than ::ffff:0:0/96 has the ffff past its prefix.
    CHECK(refusal("::ffff:0:0/80").find("::/80") != std::string::npos);
    CHECK(block("::ffff:0.0.0.0/96").to_string() == "0.0.0.0/0");
}

TEST_CASE("cidr/peers from sockaddr", "[util]") {
    sockaddr_in four{};
    four.sin_family = AF_INET;
    REQUIRE(inet_pton(AF_INET, "127.0.0.2", &four.sin_addr) == 1);
    CHECK(IpAddress::of(reinterpret_cast<const sockaddr*>(&four)) == address("127.0.0.2"));

    sockaddr_in6 six{};
    six.sin6_family = AF_INET6;
    REQUIRE(inet_pton(AF_INET6, "::1", &six.sin6_addr) == 1);
    CHECK(IpAddress::of(reinterpret_cast<const sockaddr*>(&six)) == address("::1"));

    sockaddr_un local{};
    local.sun_family = AF_UNIX;
    CHECK(IpAddress::of(reinterpret_cast<const sockaddr*>(&local)).family ==
          IpAddress::Family::unix_socket);
    CHECK(IpAddress::of(nullptr).family == IpAddress::Family::none);
}

TEST_CASE("cidr/strict parsing", "[util]") {
    CHECK(refusal("10.0.0.0/33").find("0 to 32") != std::string::npos);
    CHECK(refusal("::/129").find("0 to 128") != std::string::npos);
    refusal("10.0.0.0/");
    refusal("10.0.0.0/08");
    refusal("10.0.0.0/8/8");
    refusal("10.0.0.0/-1");
    refusal("10.0.0.0/ 8");
    refusal("10.0.0");
    refusal("010.0.0.1");
    refusal("256.0.0.1");
    refusal("1.2.3.4.5");
    refusal("[::1]");
    refusal("fe80::1%eth0");
    refusal("example.com");
    refusal("");
    refusal("/8");
    // Host bits past the prefix: nginx masks them with a warning; here an
    // error names the block they would make.
    CHECK(refusal("10.1.2.3/8").find("10.0.0.0/8") != std::string::npos);
    CHECK(refusal("2001:db8::1/32").find("2001:db8::/32") != std::string::npos);
    CHECK(refusal("::ffff:10.1.0.0/104").find("10.0.0.0/8") != std::string::npos);
}

TEST_CASE("cidr/rules: first match wins, none allows", "[util]") {
    // nginx's example: 192.168.1.1 out of its allowed /24, then everything.
    const AccessRules list = rules({{false, "192.168.1.1"},
                                    {true, "192.168.1.0/24 10.1.0.0/16"},
                                    {true, "2001:db8::/32"},
                                    {false, "all"}});
    CHECK_FALSE(list.allows(address("192.168.1.1")));
    CHECK(list.allows(address("192.168.1.2")));
    CHECK(list.allows(address("10.1.200.1")));
    CHECK(list.allows(address("::ffff:10.1.200.1")));
    CHECK(list.allows(address("2001:db8::5")));
    CHECK_FALSE(list.allows(address("10.2.0.1")));
    CHECK_FALSE(list.allows(address("::1")));
    CHECK(list.rules().size() == 5);
    CHECK(list.rules()[1].to_string() == "allow 192.168.1.0/24");
    CHECK(list.rules()[4].to_string() == "deny all");

    // Order: an early `deny all` shadows every later allow.
    CHECK_FALSE(rules({{false, "all"}, {true, "127.0.0.1"}}).allows(address("127.0.0.1")));
    CHECK(rules({{true, "127.0.0.1"}, {false, "all"}}).allows(address("127.0.0.1")));

    // No rule matches: allowed, even with allow rules present (nginx).
    CHECK(rules({{true, "10.0.0.0/8"}}).allows(address("127.0.0.1")));
    CHECK_FALSE(rules({{false, "127.0.0.0/8"}}).allows(address("127.0.0.1")));
    CHECK(AccessRules().allows(address("127.0.0.1")));

    // unix: only a unix socket's clients; all: every client.
    IpAddress local{};
    local.family = IpAddress::Family::unix_socket;
    const AccessRules only_unix = rules({{true, "unix:"}, {false, "all"}});
    CHECK(only_unix.allows(local));
    CHECK_FALSE(only_unix.allows(address("127.0.0.1")));
    CHECK(rules({{false, "0.0.0.0/0 ::/0"}}).allows(local)); // IP blocks hold no unix client
}

TEST_CASE("cidr/rules: bad entries name themselves", "[util]") {
    AccessRules list;
    std::string error;
    CHECK_FALSE(list.add(true, "10.0.0.0/8 10.0.0.300", error));
    CHECK(error.find("'10.0.0.300'") != std::string::npos);
    error.clear();
    CHECK_FALSE(list.add(true, "  ", error));
    CHECK_FALSE(error.empty());
    error.clear();
    CHECK_FALSE(list.add(false, "everyone", error));
    CHECK(error.find("'all'") != std::string::npos);
}

#if !WEFT_ASAN
TEST_CASE("cidr/matching allocates nothing", "[util]") {
    const AccessRules list =
        rules({{false, "192.168.1.1"}, {true, "192.168.1.0/24 ::1 2001:db8::/32"}, {false, "all"}});
    const IpAddress clients[] = {address("192.168.1.7"), address("::1"), address("8.8.8.8"),
                                 address("2001:db8::9")};
    int allowed = 0;
    const long before = test::allocations.load();
    for (int round = 0; round < 1000; ++round)
        for (const IpAddress& client : clients) allowed += list.allows(client);
    CHECK(test::allocations.load() == before);
    CHECK(allowed == 3000);
}
#endif
