#pragma once
// The PROXY protocol header (HAProxy's proxy-protocol.txt, versions 1 and 2)
// a load balancer sends before the first byte of the client's stream: who the
// client is, and whether it spoke TLS to the balancer.
//
// parse_proxy_header() reads the bytes received so far, from the connection's
// first byte, and says whether they are a header's beginning (incomplete), not
// a header (invalid: the connection must be closed without a response), or a
// whole header of `consumed` bytes. It keeps no state and allocates nothing:
// the caller calls again with more bytes. Bytes that cannot begin a valid
// header are rejected as soon as they arrive, so a client that does not speak
// the protocol is refused at its first read.

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft::http {

struct ProxyHeader {
    enum class Status : std::uint8_t { incomplete, invalid, done };

    // Version 1 ends within 107 bytes (the specification's worst case:
    // UNKNOWN with two full IPv6 addresses and ports, CRLF included).
    static constexpr std::size_t kMaxV1 = 107;
    // Version 2 may announce 16 + 65535 bytes, all of which must be held
    // before any is used. What balancers send is far smaller (HAProxy with
    // every TLS TLV, a 128-byte unique id and a 255-byte authority stays under
    // 1 KiB; AWS adds a VPC endpoint id): 4 KiB bounds what an unauthenticated
    // peer can make a connection hold and fits the receive buffer.
    static constexpr std::size_t kMaxV2 = 4096;

    Status status = Status::incomplete;
    std::size_t consumed = 0; // done: the header's length
    // done: false for LOCAL (a balancer's health check), UNKNOWN and the
    // families weft does not serve (unix, unspecified): the TCP peer stays
    // the client. true: `client` (AF_INET or AF_INET6, with the source port)
    // of `client_length` bytes is the client.
    bool has_client = false;
    sockaddr_storage client{};
    socklen_t client_length = 0;
    // done: the balancer received the client over TLS (v2's PP2_TYPE_SSL
    // with PP2_CLIENT_SSL set).
    bool tls = false;
};

ProxyHeader parse_proxy_header(std::string_view received);

} // namespace weft::http
