#pragma once
// The client a trusted proxy names in a forwarding header (nginx's realip
// module: set_real_ip_from, real_ip_header, real_ip_recursive on):
//   X-Forwarded-For: 203.0.113.7, 10.0.0.2
//   Forwarded: for=203.0.113.7;proto=https, for="[2001:db8::17]:4711"
//   X-Real-IP: 203.0.113.7
// When the request's peer is trusted (real_ip_from), the hops the header
// lists are walked from the nearest (the rightmost) leftwards: a trusted
// address is passed, the first untrusted one is the client; all of them
// trusted, the farthest (leftmost) is. A hop the header does not name (an
// X-Forwarded-For entry that is not an address, RFC 7239's `unknown` and
// obfuscated `_identifiers`, a Forwarded element without for=) stops the
// walk: the client is the last address passed, the peer when none was (as
// nginx does for an entry it cannot parse). Several fields of the header
// are one list, in order. A Forwarded element that breaks RFC 7239's
// grammar is an unnamed hop, and the elements after it are still read
// (never a 400): a proxy appends its own to what the client sent. Ports (`10.0.0.1:8080`,
// `[::1]:80`, Forwarded's node-port) are kept for REMOTE_PORT; an obfuscated port is none.
//
// X-Forwarded-Proto from a trusted peer says the scheme: https when its
// nearest (rightmost) entry is `https`, case-insensitively.
//
// Stateless and allocation-free: parsing runs only when real_ip_from is
// configured and the peer is trusted.

#include "http/request.hpp"
#include "util/cidr.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft::http {

enum class ForwardingHeader : std::uint8_t { x_forwarded_for, forwarded, x_real_ip };

// The field's name ("X-Forwarded-For", ...).
std::string_view header_name(ForwardingHeader header);

// One hop a header lists: an address (and its port, 0 for none), or a hop it
// does not name.
struct ForwardedNode {
    bool named = false;
    std::uint16_t port = 0;
    IpAddress address{};
};

// The hops of a request's forwarding fields, farthest first; the nearest
// kMaxNodes are kept (a walk that passes all of them stops there, as at an
// unnamed hop).
class ForwardedChain {
public:
    static constexpr std::size_t kMaxNodes = 32;

    // Appends one field value's hops.
    void add(ForwardingHeader header, std::string_view value);

    // How many hops are kept, and the i-th nearest (0: the rightmost).
    std::size_t size() const { return total_ < kMaxNodes ? total_ : kMaxNodes; }
    const ForwardedNode& nearest(std::size_t i) const {
        return nodes_[(total_ - 1 - i) % kMaxNodes];
    }

private:
    void push(const ForwardedNode& node) { nodes_[total_++ % kMaxNodes] = node; }
    void add_forwarded(std::string_view value);

    ForwardedNode nodes_[kMaxNodes];
    std::size_t total_ = 0;
};

// One node as a header writes it: `192.0.2.1`, `192.0.2.1:80`, `2001:db8::1`
// (X-Forwarded-For's bare IPv6), `[2001:db8::1]`, `[2001:db8::1]:80`;
// anything else is an unnamed hop.
ForwardedNode parse_node(std::string_view text);

// Whether `address` is one of the proxies real_ip_from lists (each an allow
// rule of `proxies`).
bool trusts(const AccessRules& proxies, const IpAddress& address);

// The client the chain names, walking from the nearest hop past trusted
// ones; an unnamed node (named false) when the peer stays the client.
ForwardedNode pick_client(const ForwardedChain& chain, const AccessRules& proxies);

// A server's real_ip_from (each an allow rule: AccessRules parses the same
// lists) and real_ip_header. No proxies: the peer is always the client.
struct RealIp {
    AccessRules proxies;
    ForwardingHeader header = ForwardingHeader::x_forwarded_for;
};

// A request's client as its trusted peer's forwarding fields name it.
// Default-initialised, only the flags are set: a Connection holds one for
// every coroutine, filled only with real_ip_from configured.
struct ForwardedClient {
    bool named = false; // a client was found: address, text and port are it
    bool https = false; // X-Forwarded-Proto: https
    IpAddress address;
    char text[46];     // the address, IPv6 in its shortest form
    char port_text[6]; // empty when the header gave no port
};

// What `request`'s fields say, for a peer in `proxies`; false when they say
// nothing (no client named, no https): the peer is the client.
bool find_forwarded_client(const Request& request, ForwardingHeader header,
                           const AccessRules& proxies, ForwardedClient& out);

// `address` as text (IPv4 dotted, IPv6 per RFC 5952, "unix:"), into `out`
// of at least 46 bytes; its length.
std::size_t address_text(const IpAddress& address, char* out);

} // namespace weft::http
