// The PROXY protocol header parser: the specification's examples byte for
// byte, hand-built version 2 headers, every prefix of a valid header
// (incomplete, then done at its end), and each malformation (invalid).

#include "http/proxy_header.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>

#include <string>

using namespace weft::http;
using namespace std::string_literals;
using Status = ProxyHeader::Status;

namespace {

const std::string kSignature = "\x0D\x0A\x0D\x0A\x00\x0D\x0A\x51\x55\x49\x54\x0A"s;

// A version 2 header: version/command byte, family/transport byte, then
// `block` (addresses and TLVs) with its length in front.
std::string v2(unsigned char version_command, unsigned char family_transport,
               const std::string& block) {
    std::string header = kSignature;
    header += static_cast<char>(version_command);
    header += static_cast<char>(family_transport);
    header += static_cast<char>(block.size() >> 8);
    header += static_cast<char>(block.size() & 0xFF);
    return header + block;
}

std::string tlv(unsigned char type, const std::string& value) {
    std::string out(1, static_cast<char>(type));
    out += static_cast<char>(value.size() >> 8);
    out += static_cast<char>(value.size() & 0xFF);
    return out + value;
}

// 192.0.2.7:50000 -> 198.51.100.1:443
const std::string kInet4 = "\xC0\x00\x02\x07\xC6\x33\x64\x01\xC3\x50\x01\xBB"s;
// [2001:db8::7]:50000 -> [2001:db8::1]:443
const std::string kInet6 = "\x20\x01\x0D\xB8"s + std::string(11, '\0') + "\x07"s +
                           "\x20\x01\x0D\xB8"s + std::string(11, '\0') + "\x01\xC3\x50\x01\xBB"s;

std::string client_text(const ProxyHeader& header) {
    char text[INET6_ADDRSTRLEN] = {};
    if (header.client.ss_family == AF_INET) {
        const auto& in = reinterpret_cast<const sockaddr_in&>(header.client);
        REQUIRE(header.client_length == sizeof(sockaddr_in));
        inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
        return std::string(text) + ":" + std::to_string(ntohs(in.sin_port));
    }
    REQUIRE(header.client.ss_family == AF_INET6);
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(header.client);
    REQUIRE(header.client_length == sizeof(sockaddr_in6));
    inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6.sin6_port));
}

// `header` then a request: done after exactly the header, and each shorter
// prefix is incomplete.
ProxyHeader parse_whole(const std::string& header) {
    const std::string received = header + "GET / HTTP/1.1\r\n";
    for (std::size_t n = 0; n < header.size(); ++n) {
        INFO("prefix of " << n << " bytes");
        CHECK(parse_proxy_header(std::string_view(received).substr(0, n)).status ==
              Status::incomplete);
    }
    const ProxyHeader parsed = parse_proxy_header(received);
    REQUIRE(parsed.status == Status::done);
    CHECK(parsed.consumed == header.size());
    CHECK(parse_proxy_header(header).consumed == header.size());
    return parsed;
}

Status status_of(const std::string& received) {
    return parse_proxy_header(received).status;
}

} // namespace

TEST_CASE("version 1: the specification's examples", "[proxy_header]") {
    ProxyHeader h = parse_whole("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n");
    CHECK(h.has_client);
    CHECK(client_text(h) == "192.168.0.1:56324");
    CHECK_FALSE(h.tls);

    const std::string longest = "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
                                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    h = parse_whole(longest);
    CHECK(client_text(h) == "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535");

    h = parse_whole("PROXY UNKNOWN\r\n");
    CHECK_FALSE(h.has_client);
    const std::string worst = "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
                              "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    CHECK(worst.size() == ProxyHeader::kMaxV1);
    h = parse_whole(worst);
    CHECK_FALSE(h.has_client);

    h = parse_whole("PROXY TCP6 2001:db8::7 ::1 0 8080\r\n");
    CHECK(client_text(h) == "[2001:db8::7]:0");
}

TEST_CASE("version 1: malformed lines are invalid", "[proxy_header]") {
    const char* const bad[] = {
        "GET / HTTP/1.1\r\n",
        "PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n",    // two spaces
        "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n",     // no such protocol
        "PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n",     // case matters
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n",       // bare LF
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n",    // trailing space
        "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n",       // a port missing
        "PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",    // leading zero
        "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", // port too large
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 99999\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 100000 2\r\n", // six digits
        "PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n",    // octet too large
        "PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n",        // three parts
        "PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n",     // leading zero in an octet
        "PROXY TCP4 ::1 5.6.7.8 1 2\r\n",          // IPv6 under TCP4
        "PROXY TCP6 1.2.3.4 ::1 1 2\r\n",          // IPv4 under TCP6
        "PROXY TCP6 1:2:3:4:5:6:7:8:9 ::1 1 2\r\n",
        "PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n", // no zone ids
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 -2\r\n",
        "PROXY UNKNOWNX\r\n",
        "PROXY UNKNOWN\rX",
        "PROXY UNKNOWN a\nb\r\n",
    };
    for (const char* line : bad) {
        INFO(line);
        CHECK(status_of(line) == Status::invalid);
    }
}

TEST_CASE("version 1: no CRLF within 107 bytes is invalid", "[proxy_header]") {
    const std::string over = "PROXY UNKNOWN " + std::string(ProxyHeader::kMaxV1, 'x');
    CHECK(status_of(over.substr(0, ProxyHeader::kMaxV1 - 1)) == Status::incomplete);
    CHECK(status_of(over.substr(0, ProxyHeader::kMaxV1)) == Status::invalid);
    CHECK(status_of(over) == Status::invalid);
    // CR as the 107th byte: its LF would be the 108th.
    std::string late = "PROXY UNKNOWN " + std::string(ProxyHeader::kMaxV1 - 15, 'x') + "\r\n";
    CHECK(late.size() == ProxyHeader::kMaxV1 + 1);
    CHECK(status_of(late) == Status::invalid);
    late.erase(14, 1); // exactly 107
    CHECK(status_of(late) == Status::done);
}

TEST_CASE("version 2: PROXY over TCP/IPv4 and IPv6", "[proxy_header]") {
    ProxyHeader h = parse_whole(v2(0x21, 0x11, kInet4));
    CHECK(h.has_client);
    CHECK(client_text(h) == "192.0.2.7:50000");
    CHECK_FALSE(h.tls);

    h = parse_whole(v2(0x21, 0x21, kInet6));
    CHECK(client_text(h) == "[2001:db8::7]:50000");
}

TEST_CASE("version 2: TLVs are walked, the SSL one sets tls", "[proxy_header]") {
    // PP2_TYPE_SSL: client bits (PP2_CLIENT_SSL), verify, then sub-TLVs
    // (version "TLSv1.3", cipher).
    const std::string ssl =
        "\x01\x00\x00\x00\x00"s + tlv(0x21, "TLSv1.3") + tlv(0x23, "TLS_AES_256_GCM_SHA384");
    ProxyHeader h =
        parse_whole(v2(0x21, 0x11,
                       kInet4 + tlv(0x01, "h2") + tlv(0x02, "example.com") + tlv(0x20, ssl) +
                           tlv(0x04, std::string(3, '\0')) +
                           tlv(0xEA, "\x01vpce-0123456789abcdef"s) + tlv(0x05, "id-1")));
    CHECK(h.tls);
    CHECK(client_text(h) == "192.0.2.7:50000");

    // The SSL TLV without PP2_CLIENT_SSL (the client spoke plain TCP).
    h = parse_whole(v2(0x21, 0x11, kInet4 + tlv(0x20, "\x00\x00\x00\x00\x00"s)));
    CHECK_FALSE(h.tls);

    // An empty TLV, and one that ends exactly at the header's end.
    h = parse_whole(v2(0x21, 0x21, kInet6 + tlv(0x04, "") + tlv(0xE0, "x")));
    CHECK_FALSE(h.tls);
}

TEST_CASE("version 2: the CRC32C TLV is checked", "[proxy_header]") {
    // Built and checksummed outside weft (crc32c("123456789") == 0xE3069283).
    const std::string good =
        "\x0D\x0A\x0D\x0A\x00\x0D\x0A\x51\x55\x49\x54\x0A\x21\x11\x00\x13\xC0\x00\x02\x07\xC6\x33"
        "\x64\x01\xC3\x50\x01\xBB\x03\x00\x04\xDC\x96\xBA\x07"s;
    CHECK(client_text(parse_whole(good)) == "192.0.2.7:50000");
    std::string bad = good;
    bad.back() ^= 1;
    CHECK(status_of(bad) == Status::invalid);
    bad = good;
    bad[17] ^= 1; // an address byte: the sum no longer matches
    CHECK(status_of(bad) == Status::invalid);
    CHECK(status_of(v2(0x21, 0x11, kInet4 + tlv(0x03, "abc"))) == Status::invalid);
}

TEST_CASE("version 2: LOCAL and foreign families keep the TCP peer", "[proxy_header]") {
    ProxyHeader h = parse_whole(v2(0x20, 0x00, ""));
    CHECK_FALSE(h.has_client);
    // LOCAL discards its block unread, whatever the family says.
    h = parse_whole(v2(0x20, 0x11, "abc"));
    CHECK_FALSE(h.has_client);
    h = parse_whole(v2(0x21, 0x00, tlv(0x04, "")));
    CHECK_FALSE(h.has_client);
    h = parse_whole(v2(0x21, 0x31, std::string(216, '\0')));
    CHECK_FALSE(h.has_client);
    h = parse_whole(v2(0x21, 0x12, kInet4)); // datagrams
    CHECK_FALSE(h.has_client);
    h = parse_whole(v2(0x21, 0x10, kInet4 + tlv(0x20, "\x01\x00\x00\x00\x00"s)));
    CHECK_FALSE(h.has_client);
    CHECK(h.tls);
}

TEST_CASE("version 2: malformed headers are invalid", "[proxy_header]") {
    std::string sig = v2(0x21, 0x11, kInet4);
    sig[6] = 'X';
    CHECK(status_of(sig) == Status::invalid);
    CHECK(status_of(sig.substr(0, 7)) == Status::invalid); // as soon as it differs
    CHECK(status_of("\r\n\r\n\x00\r\nQUIT\n"s) == Status::incomplete);
    CHECK(status_of("\r\nGET"s) == Status::invalid);

    CHECK(status_of(v2(0x11, 0x11, kInet4)) == Status::invalid); // version 1 in binary
    CHECK(status_of(v2(0x31, 0x11, kInet4)) == Status::invalid); // version 3
    CHECK(status_of(v2(0x22, 0x11, kInet4)) == Status::invalid); // command 2
    CHECK(status_of(v2(0x21, 0x41, kInet4)) == Status::invalid); // family 4
    CHECK(status_of(v2(0x21, 0x13, kInet4)) == Status::invalid); // transport 3
    // Rejected from its first 14 bytes, before the rest arrives.
    CHECK(status_of(v2(0x31, 0x11, kInet4).substr(0, 13)) == Status::invalid);
    CHECK(status_of(v2(0x21, 0x41, kInet4).substr(0, 14)) == Status::invalid);

    // Address blocks too short for their family.
    CHECK(status_of(v2(0x21, 0x11, kInet4.substr(0, 11))) == Status::invalid);
    CHECK(status_of(v2(0x21, 0x21, kInet4)) == Status::invalid);
    CHECK(status_of(v2(0x21, 0x31, kInet6)) == Status::invalid);
    // ...known from the fixed part alone.
    CHECK(status_of(v2(0x21, 0x21, kInet4).substr(0, 16)) == Status::invalid);

    // A truncated TLV head, a value past the header's end.
    CHECK(status_of(v2(0x21, 0x11, kInet4 + "\x04\x00"s)) == Status::invalid);
    CHECK(status_of(v2(0x21, 0x11, kInet4 + "\x04"s)) == Status::invalid);
    CHECK(status_of(v2(0x21, 0x11, kInet4 + tlv(0x04, "abcd").substr(0, 6))) == Status::invalid);
    // An SSL TLV too short for its fixed part, or with a broken sub-TLV.
    CHECK(status_of(v2(0x21, 0x11, kInet4 + tlv(0x20, "\x01\x00\x00\x00"s))) == Status::invalid);
    CHECK(status_of(v2(0x21, 0x11, kInet4 + tlv(0x20, "\x01\x00\x00\x00\x00\x21\x00\x05TLS"s))) ==
          Status::invalid);
}

TEST_CASE("version 2: headers above 4 KiB are invalid", "[proxy_header]") {
    const std::size_t room = ProxyHeader::kMaxV2 - 16 - kInet4.size() - 3;
    const std::string largest = v2(0x21, 0x11, kInet4 + tlv(0x04, std::string(room, '\0')));
    CHECK(largest.size() == ProxyHeader::kMaxV2);
    CHECK(status_of(largest) == Status::done);
    const std::string over = v2(0x21, 0x11, kInet4 + tlv(0x04, std::string(room + 1, '\0')));
    CHECK(status_of(over.substr(0, 16)) == Status::invalid); // known from the length
    CHECK(status_of(v2(0x20, 0x00, std::string(65535, '\0')).substr(0, 16)) == Status::invalid);
}

// Captured from HAProxy 2.6.12 (Debian 12), a client bound to 127.0.0.2
// connecting to HAProxy on 127.0.0.1.
TEST_CASE("headers as HAProxy sends them", "[proxy_header]") {
    // send-proxy
    ProxyHeader h = parse_whole("PROXY TCP4 127.0.0.2 127.0.0.1 51196 19102\r\n");
    CHECK(client_text(h) == "127.0.0.2:51196");

    // send-proxy-v2 proxy-v2-options unique-id (empty): 127.0.0.2:41480
    h = parse_whole(
        "\x0D\x0A\x0D\x0A\x00\x0D\x0A\x51\x55\x49\x54\x0A\x21\x11\x00\x0F\x7F\x00\x00\x02"
        "\x7F\x00\x00\x01\xA2\x08\x4A\x9C\x05\x00\x00"s);
    CHECK(client_text(h) == "127.0.0.2:41480");
    CHECK_FALSE(h.tls);

    // check-send-proxy: health checks are LOCAL, family unspecified.
    h = parse_whole("\x0D\x0A\x0D\x0A\x00\x0D\x0A\x51\x55\x49\x54\x0A\x20\x00\x00\x00"s);
    CHECK_FALSE(h.has_client);

    // A TLS frontend, proxy-v2-options ssl,authority,crc32c: the CRC32C TLV
    // (HAProxy's sum), authority "example.test", PP2_TYPE_SSL with
    // PP2_CLIENT_SSL and sub-TLV version "TLSv1.3".
    h = parse_whole(
        "\x0D\x0A\x0D\x0A\x00\x0D\x0A\x51\x55\x49\x54\x0A\x21\x11\x00\x34\x7F\x00\x00\x02"
        "\x7F\x00\x00\x01\xCC\x36\x4A\x9F\x03\x00\x04\x2B\x42\x97\x69\x02\x00\x0C\x65\x78"
        "\x61\x6D\x70\x6C\x65\x2E\x74\x65\x73\x74\x20\x00\x0F\x01\x00\x00\x00\x00\x21\x00"
        "\x07\x54\x4C\x53\x76\x31\x2E\x33"s);
    CHECK(client_text(h) == "127.0.0.2:52278");
    CHECK(h.tls);
}
