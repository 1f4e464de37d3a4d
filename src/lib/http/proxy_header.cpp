#include "http/proxy_header.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace weft::http {

namespace {

using Status = ProxyHeader::Status;

ProxyHeader with_status(Status status) {
    ProxyHeader header;
    header.status = status;
    return header;
}

// ---- Version 1: "PROXY TCP4 src dst sport dport\r\n", one space apart.

enum class Match : std::uint8_t { ok, more, bad };

ProxyHeader failed(Match match) {
    return with_status(match == Match::more ? Status::incomplete : Status::invalid);
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool in_ipv4(char c) {
    return is_digit(c) || c == '.';
}
bool in_ipv6(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

struct Line {
    std::string_view in;
    std::size_t pos = 0;

    // `word` next; a prefix of it at the end of the input may go on.
    Match literal(std::string_view word) {
        const std::size_t n = std::min(word.size(), in.size() - pos);
        if (in.substr(pos, n) != word.substr(0, n)) return Match::bad;
        if (n < word.size()) return Match::more;
        pos += n;
        return Match::ok;
    }

    // One to `max` bytes that pass `allowed`, ended by a byte that does not
    // (left for the next literal).
    Match field(std::string_view& out, std::size_t max, bool (*allowed)(char)) {
        std::size_t end = pos;
        while (end < in.size() && end - pos <= max && allowed(in[end])) ++end;
        if (end - pos > max) return Match::bad;
        if (end == in.size()) return Match::more;
        if (end == pos) return Match::bad;
        out = in.substr(pos, end - pos);
        pos = end;
        return Match::ok;
    }
};

// inet_pton() is strict: dotted quads of decimals without leading zeros for
// IPv4, RFC 4291 text for IPv6.
bool parse_address(std::string_view text, int family, void* into) {
    std::array<char, INET6_ADDRSTRLEN> terminated{};
    if (text.size() >= terminated.size()) return false;
    std::memcpy(terminated.data(), text.data(), text.size());
    return inet_pton(family, terminated.data(), into) == 1;
}

// 0 to 65535 in decimal, no leading zero (the specification forbids them).
bool parse_port(std::string_view text, std::uint16_t& port) {
    if (text.size() > 1 && text[0] == '0') return false;
    std::uint32_t value = 0;
    for (const char c : text) value = value * 10 + static_cast<std::uint32_t>(c - '0');
    if (value > 65535) return false;
    port = static_cast<std::uint16_t>(value);
    return true;
}

// "PROXY UNKNOWN" then anything up to CRLF, which ends within kMaxV1 bytes.
ProxyHeader parse_v1_unknown(Line line) {
    if (line.pos == line.in.size()) return with_status(Status::incomplete);
    if (line.in[line.pos] != ' ' && line.in[line.pos] != '\r') return with_status(Status::invalid);
    const std::size_t limit = std::min(line.in.size(), ProxyHeader::kMaxV1);
    for (std::size_t i = line.pos; i < limit; ++i) {
        if (line.in[i] == '\n') return with_status(Status::invalid);
        if (line.in[i] != '\r') continue;
        if (i + 1 >= ProxyHeader::kMaxV1) return with_status(Status::invalid);
        if (i + 1 == line.in.size()) return with_status(Status::incomplete);
        if (line.in[i + 1] != '\n') return with_status(Status::invalid);
        ProxyHeader header = with_status(Status::done);
        header.consumed = i + 2;
        return header;
    }
    return with_status(line.in.size() >= ProxyHeader::kMaxV1 ? Status::invalid
                                                             : Status::incomplete);
}

ProxyHeader parse_v1(std::string_view received) {
    Line line{received};
    if (const Match m = line.literal("PROXY "); m != Match::ok) return failed(m);
    if (line.pos == received.size()) return with_status(Status::incomplete);
    if (received[line.pos] == 'U') {
        if (const Match m = line.literal("UNKNOWN"); m != Match::ok) return failed(m);
        return parse_v1_unknown(line);
    }
    if (const Match m = line.literal("TCP"); m != Match::ok) return failed(m);
    if (line.pos == received.size()) return with_status(Status::incomplete);
    const bool ipv6 = received[line.pos] == '6';
    if (!ipv6 && received[line.pos] != '4') return with_status(Status::invalid);
    ++line.pos;
    const std::size_t max_address = ipv6 ? INET6_ADDRSTRLEN - 1 : INET_ADDRSTRLEN - 1;
    const auto allowed = ipv6 ? in_ipv6 : in_ipv4;
    const int family = ipv6 ? AF_INET6 : AF_INET;

    std::string_view source, destination, source_port, destination_port;
    in6_addr scratch{};
    if (const Match m = line.literal(" "); m != Match::ok) return failed(m);
    if (const Match m = line.field(source, max_address, allowed); m != Match::ok) return failed(m);
    ProxyHeader header;
    if (!parse_address(
            source, family,
            ipv6 ? static_cast<void*>(&reinterpret_cast<sockaddr_in6&>(header.client).sin6_addr)
                 : static_cast<void*>(&reinterpret_cast<sockaddr_in&>(header.client).sin_addr)))
        return with_status(Status::invalid);
    if (const Match m = line.literal(" "); m != Match::ok) return failed(m);
    if (const Match m = line.field(destination, max_address, allowed); m != Match::ok)
        return failed(m);
    if (!parse_address(destination, family, &scratch)) return with_status(Status::invalid);
    std::uint16_t port = 0, ignored = 0;
    if (const Match m = line.literal(" "); m != Match::ok) return failed(m);
    if (const Match m = line.field(source_port, 5, is_digit); m != Match::ok) return failed(m);
    if (!parse_port(source_port, port)) return with_status(Status::invalid);
    if (const Match m = line.literal(" "); m != Match::ok) return failed(m);
    if (const Match m = line.field(destination_port, 5, is_digit); m != Match::ok) return failed(m);
    if (!parse_port(destination_port, ignored)) return with_status(Status::invalid);
    if (const Match m = line.literal("\r\n"); m != Match::ok) return failed(m);

    header.status = Status::done;
    header.consumed = line.pos;
    header.has_client = true;
    header.client.ss_family = static_cast<sa_family_t>(family);
    if (ipv6) {
        reinterpret_cast<sockaddr_in6&>(header.client).sin6_port = htons(port);
        header.client_length = sizeof(sockaddr_in6);
    } else {
        reinterpret_cast<sockaddr_in&>(header.client).sin_port = htons(port);
        header.client_length = sizeof(sockaddr_in);
    }
    return header;
}

// ---- Version 2: a 16-byte fixed part, the addresses, then TLVs.

constexpr std::array<unsigned char, 12> kSignature = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                                      0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
constexpr std::size_t kFixed = 16;

enum Command : unsigned char { kLocal = 0x0, kProxy = 0x1 };
enum Family : unsigned char { kUnspec = 0x0, kInet = 0x1, kInet6 = 0x2, kUnix = 0x3 };
enum Transport : unsigned char { kStream = 0x1, kDgram = 0x2 };
// The address block's length for each family (source and destination
// addresses, then ports for the IP families).
constexpr std::array<std::size_t, 4> kAddressLength = {0, 12, 36, 216};

enum TlvType : unsigned char { kCrc32c = 0x03, kSsl = 0x20 };
constexpr unsigned char kClientSsl = 0x01;
constexpr std::size_t kSslFixed = 5; // client bits, then a 32-bit verify result

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit: it runs
// once per header that carries one, over at most kMaxV2 bytes.
std::uint32_t crc32c(std::uint32_t crc, const unsigned char* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return crc;
}

// The header's checksum with its own 4 bytes (at `at`) taken as zeros.
std::uint32_t header_crc32c(const unsigned char* header, std::size_t length, std::size_t at) {
    constexpr std::array<unsigned char, 4> zeros{};
    std::uint32_t crc = crc32c(0xFFFFFFFFu, header, at);
    crc = crc32c(crc, zeros.data(), zeros.size());
    crc = crc32c(crc, header + at + 4, length - at - 4);
    return ~crc;
}

std::uint32_t read_be32(const unsigned char* p) {
    return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 |
           static_cast<std::uint32_t>(p[2]) << 8 | p[3];
}

// Each TLV's 3-byte head and value lie within [from, to): false otherwise.
// `visit(type, value, length)` returns false to reject the header.
template <class Visit>
bool walk_tlvs(const unsigned char* header, std::size_t from, std::size_t to, Visit visit) {
    while (from < to) {
        if (to - from < 3) return false; // a truncated TLV head
        const std::size_t length =
            static_cast<std::size_t>(header[from + 1]) << 8 | header[from + 2];
        if (length > to - from - 3) return false; // a value past the header's end
        if (!visit(header[from], from + 3, length)) return false;
        from += 3 + length;
    }
    return true;
}

ProxyHeader parse_v2(std::string_view received) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(received.data());
    const std::size_t size = received.size();
    if (std::memcmp(bytes, kSignature.data(), std::min(size, kSignature.size())) != 0)
        return with_status(Status::invalid);
    // Version 2 and a known command, family and transport: anything else is
    // to be rejected (the specification, 2.2).
    if (size > 12 && ((bytes[12] >> 4) != 2 || (bytes[12] & 0xF) > kProxy))
        return with_status(Status::invalid);
    if (size > 13 && ((bytes[13] >> 4) > kUnix || (bytes[13] & 0xF) > kDgram))
        return with_status(Status::invalid);
    if (size < kFixed) return with_status(Status::incomplete);

    const unsigned char command = bytes[12] & 0xF;
    const unsigned char family = bytes[13] >> 4;
    const unsigned char transport = bytes[13] & 0xF;
    const std::size_t total = kFixed + (static_cast<std::size_t>(bytes[14]) << 8 | bytes[15]);
    const std::size_t addresses = kFixed + kAddressLength[family];
    if (total > ProxyHeader::kMaxV2) return with_status(Status::invalid);
    if (command == kProxy && total < addresses) return with_status(Status::invalid);
    if (size < total) return with_status(Status::incomplete);

    ProxyHeader header = with_status(Status::done);
    header.consumed = total;
    // LOCAL: the balancer's own connection; its block is discarded unread.
    if (command == kLocal) return header;

    bool tls = false;
    const auto visit = [&](unsigned char type, std::size_t value, std::size_t length) {
        if (type == kCrc32c)
            return length == 4 && header_crc32c(bytes, total, value) == read_be32(bytes + value);
        if (type != kSsl) return true; // ALPN, authority, NOOP, AWS's 0xEA...: ignored
        if (length < kSslFixed) return false;
        tls = (bytes[value] & kClientSsl) != 0;
        return walk_tlvs(bytes, value + kSslFixed, value + length,
                         [](unsigned char, std::size_t, std::size_t) { return true; });
    };
    if (!walk_tlvs(bytes, addresses, total, visit)) return with_status(Status::invalid);
    header.tls = tls;

    // Unix and unspecified families, and datagrams, which a TCP listener
    // cannot be relayed: keep the TCP peer, as for LOCAL.
    if (transport != kStream || (family != kInet && family != kInet6)) return header;
    header.has_client = true;
    if (family == kInet) {
        auto& in = reinterpret_cast<sockaddr_in&>(header.client);
        in.sin_family = AF_INET;
        std::memcpy(&in.sin_addr, bytes + kFixed, 4);
        std::memcpy(&in.sin_port, bytes + kFixed + 8, 2); // network order on the wire too
        header.client_length = sizeof(sockaddr_in);
    } else {
        auto& in6 = reinterpret_cast<sockaddr_in6&>(header.client);
        in6.sin6_family = AF_INET6;
        std::memcpy(&in6.sin6_addr, bytes + kFixed, 16);
        std::memcpy(&in6.sin6_port, bytes + kFixed + 32, 2);
        header.client_length = sizeof(sockaddr_in6);
    }
    return header;
}

} // namespace

ProxyHeader parse_proxy_header(std::string_view received) {
    if (received.empty()) return with_status(Status::incomplete);
    if (received[0] == 'P') return parse_v1(received);
    if (received[0] == '\r') return parse_v2(received);
    return with_status(Status::invalid);
}

} // namespace weft::http
