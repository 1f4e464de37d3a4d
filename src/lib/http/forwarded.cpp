#include "http/forwarded.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace weft::http {

namespace {

bool is_ows(char c) {
    return c == ' ' || c == '\t';
}

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && is_ows(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_ows(text.back())) text.remove_suffix(1);
    return text;
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// RFC 9110's tchar.
bool is_token_char(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c)) return true;
    return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

// RFC 7239's obfnode and obfport: "_" 1*(ALPHA / DIGIT / "." / "_" / "-").
bool is_obfuscated(std::string_view text) {
    if (text.size() < 2 || text.front() != '_') return false;
    for (char c : text.substr(1))
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '.' ||
              c == '_' || c == '-'))
            return false;
    return true;
}

// A node's port: 1*5DIGIT up to 65535 (0: none), or an obfuscated one,
// which names no port either. false: neither.
bool parse_port(std::string_view text, std::uint16_t& port) {
    port = 0;
    if (is_obfuscated(text)) return true;
    if (text.empty() || text.size() > 5) return false;
    unsigned value = 0;
    for (char c : text) {
        if (!is_digit(c)) return false;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value > 65535) return false;
    port = static_cast<std::uint16_t>(value);
    return true;
}

// Case-insensitive "for".
bool is_for(std::string_view name) {
    return name.size() == 3 && (name[0] | 0x20) == 'f' && (name[1] | 0x20) == 'o' &&
           (name[2] | 0x20) == 'r';
}

bool is_https(std::string_view word) {
    return ascii::equals_ignoring_case(word, "https");
}

} // namespace

std::string_view header_name(ForwardingHeader header) {
    switch (header) {
    case ForwardingHeader::forwarded:
        return "Forwarded";
    case ForwardingHeader::x_real_ip:
        return "X-Real-IP";
    case ForwardingHeader::x_forwarded_for:
        break;
    }
    return "X-Forwarded-For";
}

ForwardedNode parse_node(std::string_view text) {
    ForwardedNode node;
    std::string_view host = text;
    std::string_view port;
    bool has_port = false;
    if (text.starts_with('[')) {
        const std::size_t close = text.find(']');
        if (close == std::string_view::npos) return node;
        host = text.substr(1, close - 1);
        if (host.find(':') == std::string_view::npos) return node; // [192.0.2.1]
        const std::string_view rest = text.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return node;
            port = rest.substr(1);
            has_port = true;
        }
    } else if (const std::size_t colon = text.find(':');
               colon != std::string_view::npos &&
               text.find(':', colon + 1) == std::string_view::npos) {
        host = text.substr(0, colon); // a.b.c.d:port (a bare IPv6 has two or more)
        port = text.substr(colon + 1);
        has_port = true;
    }
    if (has_port && !parse_port(port, node.port)) return node;
    const std::optional<IpAddress> address = IpAddress::parse(host);
    if (!address) return node;
    node.named = true;
    node.address = *address;
    return node;
}

void ForwardedChain::add(ForwardingHeader header, std::string_view value) {
    if (header == ForwardingHeader::forwarded) return add_forwarded(value);
    if (header == ForwardingHeader::x_real_ip) {
        value = trimmed(value);
        if (!value.empty()) push(parse_node(value));
        return;
    }
    // X-Forwarded-For: a list of nodes; empty entries (", ,") are none.
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        const std::string_view entry = trimmed(value.substr(0, comma));
        if (!entry.empty()) push(parse_node(entry));
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
}

namespace {

// One element of a Forwarded field from `p` up to its ',' (or `end`, where
// `p` then stands): its node (unnamed without `for`) and whether it had a
// pair; false when it breaks the grammar.
//   forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//   forwarded-pair    = token "=" value
//   value             = token / quoted-string
// OWS is taken around ';', leniently; a parameter twice is malformed.
bool parse_element(const char*& p, const char* end, ForwardedNode& node, bool& any_pair) {
    bool has_for = false;
    for (;;) {
        while (p < end && is_ows(*p)) ++p;
        if (p == end || *p == ',' || *p == ';') {
            // An empty pair; what ends it comes next.
        } else {
            const char* name_start = p;
            while (p < end && is_token_char(*p)) ++p;
            const std::string_view name(name_start, static_cast<std::size_t>(p - name_start));
            if (name.empty() || p == end || *p != '=') return false;
            ++p;
            // Unescaped into `text` (a node longer than it names nobody).
            char text[64];
            std::size_t length = 0;
            bool too_long = false;
            if (p < end && *p == '"') {
                ++p;
                for (;;) {
                    if (p == end) return false;
                    char c = *p++;
                    if (c == '"') break;
                    if (c == '\\') {
                        if (p == end) return false;
                        c = *p++;
                    }
                    const auto u = static_cast<unsigned char>(c);
                    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
                    if (length < sizeof text)
                        text[length++] = c;
                    else
                        too_long = true;
                }
            } else {
                const char* start = p;
                while (p < end && is_token_char(*p)) ++p;
                if (p == start) return false;
                length = static_cast<std::size_t>(p - start);
                if (length > sizeof text) {
                    too_long = true;
                    length = sizeof text;
                }
                std::memcpy(text, start, length);
            }
            any_pair = true;
            if (is_for(name)) {
                if (has_for) return false;
                has_for = true;
                if (!too_long) node = parse_node({text, length});
            }
            while (p < end && is_ows(*p)) ++p;
        }
        if (p == end || *p == ',') return true;
        if (*p != ';') return false;
        ++p;
    }
}

} // namespace

void ForwardedChain::add_forwarded(std::string_view value) {
    // RFC 7239 §4: Forwarded = 1#forwarded-element, OWS around each ','. An
    // element without pairs (",,") is no hop; one without `for` is an
    // unnamed hop, and so is one that breaks the grammar: what follows it is
    // read from the first ',' after its start, quoted or not. A proxy
    // appends its element to what the client sent, so a client's broken
    // element (an unclosed quote swallows the rest) must not hide the
    // proxy's: the whole field unread, the proxy would be the client.
    const char* p = value.data();
    const char* const end = p + value.size();
    while (p < end) {
        const char* const start = p;
        ForwardedNode node;
        bool any_pair = false;
        if (!parse_element(p, end, node, any_pair)) {
            push(ForwardedNode{});
            const void* comma = std::memchr(start, ',', static_cast<std::size_t>(end - start));
            p = comma ? static_cast<const char*>(comma) : end;
        } else if (any_pair) {
            push(node);
        }
        if (p < end) ++p; // the ','
    }
}

bool trusts(const AccessRules& proxies, const IpAddress& address) {
    for (const AccessRule& rule : proxies.rules())
        if (rule.matches(address)) return true;
    return false;
}

ForwardedNode pick_client(const ForwardedChain& chain, const AccessRules& proxies) {
    ForwardedNode client; // unnamed: the peer
    for (std::size_t i = 0; i < chain.size(); ++i) {
        const ForwardedNode& node = chain.nearest(i);
        if (!node.named) break;
        client = node;
        if (!trusts(proxies, node.address)) break;
    }
    return client;
}

std::size_t address_text(const IpAddress& address, char* out) {
    switch (address.family) {
    case IpAddress::Family::ipv4: {
        char* p = out;
        for (int i = 0; i < 4; ++i) {
            if (i) *p++ = '.';
            p = std::to_chars(p, p + 3, address.bytes[i]).ptr;
        }
        *p = '\0';
        return static_cast<std::size_t>(p - out);
    }
    case IpAddress::Family::ipv6:
        if (!inet_ntop(AF_INET6, address.bytes, out, INET6_ADDRSTRLEN)) break;
        return std::strlen(out);
    case IpAddress::Family::unix_socket:
        std::memcpy(out, "unix:", 6);
        return 5;
    case IpAddress::Family::none:
        break;
    }
    out[0] = '\0';
    return 0;
}

bool find_forwarded_client(const Request& request, ForwardingHeader header,
                           const AccessRules& proxies, ForwardedClient& out) {
    out = ForwardedClient{};
    const std::string_view name = header_name(header);
    ForwardedChain chain;
    std::string_view proto;
    for (std::size_t i = 0; i < request.header_count; ++i) {
        const Header& field = request.headers[i];
        if (ascii::equals_ignoring_case(field.name, name))
            chain.add(header, field.value);
        else if (ascii::equals_ignoring_case(field.name, "X-Forwarded-Proto"))
            proto = field.value;
    }
    const ForwardedNode client = pick_client(chain, proxies);
    if (client.named) {
        out.named = true;
        out.address = client.address;
        address_text(client.address, out.text);
        if (client.port) *std::to_chars(out.port_text, out.port_text + 5, client.port).ptr = '\0';
    }
    // The nearest proxy's entry: the last field's rightmost.
    const std::size_t comma = proto.rfind(',');
    if (comma != std::string_view::npos) proto.remove_prefix(comma + 1);
    out.https = is_https(trimmed(proto));
    return out.named || out.https;
}

} // namespace weft::http
