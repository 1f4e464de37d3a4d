// Forwarding headers (http/forwarded.hpp): nodes as X-Forwarded-For and
// RFC 7239 write them, RFC 7239's own examples, the walk from the nearest
// hop past trusted proxies, and what names nobody (the peer stays the
// client).

#include "http/forwarded.hpp"

#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

using namespace weft;
using namespace weft::http;

namespace {

AccessRules proxies(std::string_view list) {
    AccessRules rules;
    std::string error;
    REQUIRE(rules.add(true, list, error));
    return rules;
}

// The text of the i-th nearest hop: its address, ":port" when it has one,
// "?" when unnamed.
std::string node_text(const ForwardedNode& node) {
    if (!node.named) return "?";
    char text[46];
    address_text(node.address, text);
    std::string out = text;
    if (node.port) out += ":" + std::to_string(node.port);
    return out;
}

// The chain's hops, farthest first.
std::string chain_of(ForwardingHeader header, const std::vector<std::string_view>& fields) {
    ForwardedChain chain;
    for (std::string_view field : fields) chain.add(header, field);
    std::string out;
    for (std::size_t i = chain.size(); i-- > 0;) {
        if (!out.empty()) out += " ";
        out += node_text(chain.nearest(i));
    }
    return out;
}

std::string forwarded(std::string_view value) {
    return chain_of(ForwardingHeader::forwarded, {value});
}

std::string xff(std::string_view value) {
    return chain_of(ForwardingHeader::x_forwarded_for, {value});
}

// The client picked for the fields, trusting `trusted`; "peer" if none.
std::string client(ForwardingHeader header, const std::vector<std::string_view>& fields,
                   std::string_view trusted = "10.0.0.0/8 ::1") {
    ForwardedChain chain;
    for (std::string_view field : fields) chain.add(header, field);
    const ForwardedNode node = pick_client(chain, proxies(trusted));
    return node.named ? node_text(node) : "peer";
}

struct Fields {
    std::vector<std::pair<std::string, std::string>> fields;
    Request request;

    Fields(std::initializer_list<std::pair<std::string, std::string>> f) : fields(f) {
        for (const auto& [name, value] : fields)
            request.headers[request.header_count++] = {name, value};
    }
};

} // namespace

TEST_CASE("nodes: IPv4, IPv6 bare and in brackets, ports", "[forwarded]") {
    CHECK(node_text(parse_node("192.0.2.60")) == "192.0.2.60");
    CHECK(node_text(parse_node("192.0.2.60:4711")) == "192.0.2.60:4711");
    CHECK(node_text(parse_node("2001:db8:cafe::17")) == "2001:db8:cafe::17");
    CHECK(node_text(parse_node("[2001:db8:cafe::17]")) == "2001:db8:cafe::17");
    CHECK(node_text(parse_node("[2001:db8:cafe::17]:4711")) == "2001:db8:cafe::17:4711");
    CHECK(node_text(parse_node("::ffff:192.0.2.1")) == "192.0.2.1"); // mapped: the IPv4 one
    CHECK(node_text(parse_node("192.0.2.60:_obf")) == "192.0.2.60"); // an obfuscated port: none
    for (const char* unnamed :
         {"unknown", "_hidden", "_SEVKISEK", "", "garbage", "192.0.2",
          "192.0.2.60:", "192.0.2.60:65536", "192.0.2.60:123456", "[192.0.2.60]", "[2001:db8::1",
          "[2001:db8::1]x", "fe80::1%eth0", "1.2.3.4 5.6.7.8", "[::1]:http"})
        CHECK(node_text(parse_node(unnamed)) == "?");
}

TEST_CASE("RFC 7239's examples", "[forwarded]") {
    // §4, §5.2, §6 and §7.4 (X-Forwarded-For as Forwarded).
    CHECK(forwarded("for=\"_gazonk\"") == "?");
    CHECK(forwarded("For=\"[2001:db8:cafe::17]:4711\"") == "2001:db8:cafe::17:4711");
    CHECK(forwarded("for=192.0.2.60;proto=http;by=203.0.113.43") == "192.0.2.60");
    CHECK(forwarded("for=192.0.2.43, for=198.51.100.17") == "192.0.2.43 198.51.100.17");
    CHECK(forwarded("for=192.0.2.43,for=\"[2001:db8:cafe::17]\",for=unknown") ==
          "192.0.2.43 2001:db8:cafe::17 ?");
    CHECK(forwarded("for=192.0.2.43, for=\"[2001:db8:cafe::17]\"") ==
          "192.0.2.43 2001:db8:cafe::17");
    CHECK(forwarded("for=unknown") == "?");
    CHECK(forwarded("for=_hidden, for=_SEVKISEK") == "? ?");
    CHECK(forwarded("for=\"_Rx4bTs\";by=\"_GALLE\"") == "?");
}

TEST_CASE("Forwarded: quoting, case, empty elements, lenient OWS", "[forwarded]") {
    CHECK(forwarded("for=\"192.0.2.1:8080\"") == "192.0.2.1:8080");
    CHECK(forwarded("FOR=192.0.2.1") == "192.0.2.1");
    CHECK(forwarded("for=\"\\1\\92.0.2.1\"") == "192.0.2.1"); // quoted-pairs
    CHECK(forwarded(", for=192.0.2.1 ,, for=192.0.2.2,") == "192.0.2.1 192.0.2.2");
    CHECK(forwarded("proto=https; for=192.0.2.1 ; by=10.0.0.1") == "192.0.2.1");
    CHECK(forwarded("proto=https") == "?"); // an element without for: an unnamed hop
    CHECK(forwarded("for=192.0.2.1;;") == "192.0.2.1");
    CHECK(forwarded("") == "");
    CHECK(forwarded("host=\"a,b;c\";for=192.0.2.1") == "192.0.2.1"); // , and ; quoted
}

TEST_CASE("Forwarded: an element that breaks the grammar is an unnamed hop", "[forwarded]") {
    for (const char* bad :
         {"for", "for=", "for =192.0.2.1", "for= 192.0.2.1", "=192.0.2.1", "for=192.0.2.1:80",
          "for=[::1]", "for=\"192.0.2.1", "for=\"a\\", "for=192.0.2.1;for=192.0.2.2",
          "for=192.0.2.1 for=192.0.2.2", "for=\"a\"b", "f(r=1", "for=\"a\x01\""})
        CHECK(forwarded(bad) == "?");
    // What follows is read from the next ',' after its start, quoted or not:
    // the element a proxy appended to a client's broken one stays its own.
    CHECK(forwarded("for=\"x, for=192.0.2.9") == "? 192.0.2.9");
    CHECK(forwarded("garbage(, for=192.0.2.9") == "? 192.0.2.9");
    CHECK(forwarded("for=\"x, for=\"[2001:db8::1]:80\"") == "? 2001:db8::1:80");
    CHECK(forwarded("host=\"a, for=10.0.0.1\";bad, for=192.0.2.9") == "? ? 192.0.2.9");
    CHECK(chain_of(ForwardingHeader::forwarded, {"for=\"x", "for=192.0.2.9"}) == "? 192.0.2.9");
}

TEST_CASE("X-Forwarded-For: entries, spaces, empty ones, several fields", "[forwarded]") {
    CHECK(xff("203.0.113.7") == "203.0.113.7");
    CHECK(xff("203.0.113.7, 10.0.0.2,10.0.0.3") == "203.0.113.7 10.0.0.2 10.0.0.3");
    CHECK(xff(" , 203.0.113.7 ,\t,") == "203.0.113.7");
    CHECK(xff("203.0.113.7, unknown, 2001:db8::5, [2001:db8::6]:80") ==
          "203.0.113.7 ? 2001:db8::5 2001:db8::6:80");
    CHECK(chain_of(ForwardingHeader::x_forwarded_for, {"1.1.1.1, 2.2.2.2", "3.3.3.3"}) ==
          "1.1.1.1 2.2.2.2 3.3.3.3");
    CHECK(chain_of(ForwardingHeader::x_real_ip, {" 203.0.113.7 "}) == "203.0.113.7");
    CHECK(chain_of(ForwardingHeader::x_real_ip, {"1.1.1.1, 2.2.2.2"}) == "?");
}

TEST_CASE("the client: the nearest untrusted hop", "[forwarded]") {
    using H = ForwardingHeader;
    CHECK(client(H::x_forwarded_for, {"203.0.113.7"}) == "203.0.113.7");
    CHECK(client(H::x_forwarded_for, {"203.0.113.7, 10.0.0.2, 10.0.0.3"}) == "203.0.113.7");
    // What a client wrote before the first untrusted hop does not count.
    CHECK(client(H::x_forwarded_for, {"6.6.6.6, 203.0.113.7, 10.0.0.2"}) == "203.0.113.7");
    // All trusted: the farthest.
    CHECK(client(H::x_forwarded_for, {"10.0.0.1, 10.0.0.2"}) == "10.0.0.1");
    // Several fields are one list: the last field's entries are nearest.
    CHECK(client(H::x_forwarded_for, {"203.0.113.7", "10.0.0.2", "198.51.100.1, 10.0.0.3"}) ==
          "198.51.100.1");
    // An unnamed hop stops the walk at the last address passed.
    CHECK(client(H::x_forwarded_for, {"203.0.113.7, garbage, 10.0.0.2"}) == "10.0.0.2");
    CHECK(client(H::x_forwarded_for, {"203.0.113.7, garbage"}) == "peer");
    CHECK(client(H::x_forwarded_for, {""}) == "peer");
    CHECK(client(H::x_forwarded_for, {}) == "peer");
    CHECK(client(H::forwarded, {"for=unknown, for=10.0.0.2"}) == "10.0.0.2");
    CHECK(client(H::forwarded, {"for=203.0.113.7, for=\"[::1]:8080\""}) == "203.0.113.7");
    CHECK(client(H::forwarded, {"for=\"[2001:db8::17]:4711\", for=10.0.0.9"}) ==
          "2001:db8::17:4711");
    CHECK(client(H::forwarded, {"for=_hidden"}) == "peer");
    // A malformed element nearest: the peer; farther, it hides nothing nearer.
    CHECK(client(H::forwarded, {"for=203.0.113.7", "for=\"10.0.0.1"}) == "peer");
    CHECK(client(H::forwarded, {"for=\"10.0.0.1, for=203.0.113.7"}) == "203.0.113.7");
    CHECK(client(H::forwarded, {"for=\"10.0.0.1", "for=203.0.113.7"}) == "203.0.113.7");
    CHECK(client(H::x_real_ip, {"203.0.113.7"}) == "203.0.113.7");
    CHECK(client(H::x_real_ip, {"10.0.0.5"}) == "10.0.0.5");
}

TEST_CASE("the client past more hops than are kept", "[forwarded]") {
    std::string list = "203.0.113.7";
    for (int i = 0; i < 40; ++i) list += ", 10.0.0." + std::to_string(i + 1);
    // The 32 nearest are all trusted: the walk stops at the farthest kept.
    CHECK(client(ForwardingHeader::x_forwarded_for, {list}) == "10.0.0.9");
    CHECK(client(ForwardingHeader::x_forwarded_for, {list}, "0.0.0.0/0") == "10.0.0.9");
}

TEST_CASE("find_forwarded_client: text, port, X-Forwarded-Proto", "[forwarded]") {
    const AccessRules trusted = proxies("10.0.0.0/8");
    ForwardedClient out;
    {
        Fields f{{"Host", "a"}, {"x-forwarded-for", "203.0.113.7, 10.0.0.2"}};
        REQUIRE(find_forwarded_client(f.request, ForwardingHeader::x_forwarded_for, trusted, out));
        CHECK(out.named);
        CHECK(std::string(out.text) == "203.0.113.7");
        CHECK(std::string(out.port_text).empty());
        CHECK(!out.https);
    }
    {
        Fields f{{"Forwarded", "for=\"[2001:db8::17]:4711\";proto=https"},
                 {"X-Forwarded-Proto", "http"},
                 {"X-Forwarded-Proto", "http, HTTPS "}};
        REQUIRE(find_forwarded_client(f.request, ForwardingHeader::forwarded, trusted, out));
        CHECK(std::string(out.text) == "2001:db8::17");
        CHECK(std::string(out.port_text) == "4711");
        CHECK(out.https);
    }
    {
        // The other header is not read.
        Fields f{{"Forwarded", "for=203.0.113.7"}};
        CHECK(!find_forwarded_client(f.request, ForwardingHeader::x_forwarded_for, trusted, out));
        CHECK(!out.named);
    }
    {
        Fields f{{"X-Forwarded-For", "garbage"}, {"X-Forwarded-Proto", "https"}};
        REQUIRE(find_forwarded_client(f.request, ForwardingHeader::x_forwarded_for, trusted, out));
        CHECK(!out.named);
        CHECK(out.https);
    }
    {
        Fields f{{"X-Forwarded-Proto", "https, http"}};
        CHECK(!find_forwarded_client(f.request, ForwardingHeader::x_forwarded_for, trusted, out));
    }
}

TEST_CASE("trusts: blocks, single addresses, unix:", "[forwarded]") {
    const AccessRules trusted = proxies("10.0.0.0/8 ::1 unix:");
    CHECK(trusts(trusted, *IpAddress::parse("10.1.2.3")));
    CHECK(trusts(trusted, *IpAddress::parse("::1")));
    CHECK(trusts(trusted, *IpAddress::parse("::ffff:10.0.0.1")));
    CHECK(!trusts(trusted, *IpAddress::parse("11.0.0.1")));
    IpAddress unix_peer{};
    unix_peer.family = IpAddress::Family::unix_socket;
    CHECK(trusts(trusted, unix_peer));
    CHECK(!trusts(AccessRules{}, *IpAddress::parse("10.1.2.3")));
}
