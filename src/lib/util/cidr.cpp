#include "util/cidr.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace weft {

namespace {

constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

// ::ffff:a.b.c.d as a.b.c.d.
IpAddress from_ipv6(const std::uint8_t (&bytes)[16]) {
    IpAddress address{};
    if (std::memcmp(bytes, kMapped, sizeof kMapped) == 0) {
        address.family = IpAddress::Family::ipv4;
        std::memcpy(address.bytes, bytes + 12, 4);
    } else {
        address.family = IpAddress::Family::ipv6;
        std::memcpy(address.bytes, bytes, 16);
    }
    return address;
}

bool is_whitespace(char c) {
    return c == ' ' || c == '\t';
}

} // namespace

IpAddress IpAddress::of(const sockaddr* address) {
    IpAddress out{};
    if (!address) return out;
    switch (address->sa_family) {
    case AF_INET:
        out.family = Family::ipv4;
        std::memcpy(out.bytes, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, 4);
        break;
    case AF_INET6: {
        std::uint8_t bytes[16];
        std::memcpy(bytes, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, 16);
        out = from_ipv6(bytes);
        break;
    }
    case AF_UNIX:
        out.family = Family::unix_socket;
        break;
    default:
        break;
    }
    return out;
}

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
    // inet_pton takes a C string; the longest IPv6 text is 45 characters.
    char copy[INET6_ADDRSTRLEN + 1];
    if (text.empty() || text.size() >= sizeof copy) return std::nullopt;
    std::memcpy(copy, text.data(), text.size());
    copy[text.size()] = '\0';
    IpAddress address{};
    if (inet_pton(AF_INET, copy, address.bytes) == 1) {
        address.family = Family::ipv4;
        return address;
    }
    std::uint8_t bytes[16];
    if (inet_pton(AF_INET6, copy, bytes) == 1) return from_ipv6(bytes);
    return std::nullopt;
}

std::optional<Cidr> Cidr::parse(std::string_view text, std::string& error) {
    const std::size_t slash = text.find('/');
    const std::string_view address_text = text.substr(0, slash);
    std::optional<IpAddress> address = IpAddress::parse(address_text);
    if (!address) {
        error = "'" + std::string(address_text) + "' is not an IPv4 or IPv6 address";
        return std::nullopt;
    }
    const bool written_v6 = address_text.find(':') != std::string_view::npos;
    const unsigned written_bits = written_v6 ? 128 : 32;
    unsigned prefix = written_bits;
    if (slash != std::string_view::npos) {
        const std::string_view digits = text.substr(slash + 1);
        bool valid =
            !digits.empty() && digits.size() <= 3 && (digits.size() == 1 || digits[0] != '0');
        prefix = 0;
        for (char c : digits) {
            valid = valid && c >= '0' && c <= '9';
            prefix = prefix * 10 + static_cast<unsigned>(c - '0');
        }
        if (!valid || prefix > written_bits) {
            error = "'" + std::string(text) + "': the prefix length is a number from 0 to " +
                    std::to_string(written_bits);
            return std::nullopt;
        }
    }
    if (written_v6 && address->family == IpAddress::Family::ipv4) {
        // ::ffff:a.b.c.d/n: the IPv4 block a.b.c.d/(n-96); a shorter
        // prefix leaves the ffff past it, refused below as host bits.
        if (prefix >= 96) {
            prefix -= 96;
        } else {
            std::uint8_t bytes[16];
            std::memcpy(bytes, kMapped, sizeof kMapped);
            std::memcpy(bytes + 12, address->bytes, 4);
            address->family = IpAddress::Family::ipv6;
            std::memcpy(address->bytes, bytes, 16);
        }
    }
    Cidr block;
    block.base_ = *address;
    block.prefix_ = static_cast<std::uint8_t>(prefix);
    std::uint8_t mask[16] = {};
    for (unsigned bit = 0; bit < prefix; ++bit) mask[bit / 8] |= std::uint8_t(0x80u >> (bit % 8));
    bool host_bits = false;
    for (std::size_t i = 0; i < 16; ++i) {
        host_bits = host_bits || (block.base_.bytes[i] & ~mask[i]);
        block.base_.bytes[i] &= mask[i];
    }
    if (host_bits) {
        error = "'" + std::string(text) + "' has bits set past its prefix (the block is " +
                block.to_string() + ")";
        return std::nullopt;
    }
    std::memcpy(block.mask_, mask, 16);
    std::memcpy(block.bits_, block.base_.bytes, 16);
    return block;
}

bool Cidr::contains(const IpAddress& address) const {
    if (address.family != base_.family) return false;
    std::uint64_t halves[2];
    std::memcpy(halves, address.bytes, 16);
    return ((halves[0] & mask_[0]) == bits_[0]) & ((halves[1] & mask_[1]) == bits_[1]);
}

std::string Cidr::to_string() const {
    char text[INET6_ADDRSTRLEN] = "";
    const bool v4 = base_.family == IpAddress::Family::ipv4;
    inet_ntop(v4 ? AF_INET : AF_INET6, base_.bytes, text, sizeof text);
    std::string out = text;
    if (prefix_ != (v4 ? 32 : 128)) out += "/" + std::to_string(prefix_);
    return out;
}

std::string AccessRule::to_string() const {
    const char* verb = allow ? "allow " : "deny ";
    switch (scope) {
    case Scope::all:
        return std::string(verb) + "all";
    case Scope::unix_socket:
        return std::string(verb) + "unix:";
    case Scope::block:
        break;
    }
    return verb + block.to_string();
}

bool AccessRules::add(bool allow, std::string_view list, std::string& error) {
    std::size_t at = 0;
    bool any = false;
    while (at < list.size()) {
        while (at < list.size() && is_whitespace(list[at])) ++at;
        std::size_t end = at;
        while (end < list.size() && !is_whitespace(list[end])) ++end;
        if (end == at) break;
        const std::string_view word = list.substr(at, end - at);
        at = end;
        any = true;
        AccessRule rule;
        rule.allow = allow;
        if (word == "all") {
            rule.scope = AccessRule::Scope::all;
        } else if (word == "unix:") {
            rule.scope = AccessRule::Scope::unix_socket;
        } else {
            std::string why;
            const std::optional<Cidr> block = Cidr::parse(word, why);
            if (!block) {
                error = "expected an address, a block (10.0.0.0/8), 'all' or 'unix:': " + why;
                return false;
            }
            rule.block = *block;
        }
        rules_.push_back(rule);
    }
    if (!any) error = "expected addresses, blocks (10.0.0.0/8), 'all' or 'unix:'";
    return any;
}

} // namespace weft
