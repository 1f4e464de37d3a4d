#include "util/address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <charconv>
#include <cstring>

namespace weft {

namespace {

bool parse_port(std::string_view text, std::uint16_t& port) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || value > 65535)
        return false;
    port = static_cast<std::uint16_t>(value);
    return true;
}

} // namespace

std::optional<Address> Address::parse(std::string_view text, std::string& error) {
    Address a;
    if (text.starts_with("unix:")) {
        const std::string_view path = text.substr(5);
        sockaddr_un un{};
        if (path.empty()) {
            error = "a unix address needs a path: unix:/run/weft.sock";
            return std::nullopt;
        }
        if (path.size() >= sizeof un.sun_path) {
            error =
                "unix socket path longer than " + std::to_string(sizeof un.sun_path - 1) + " bytes";
            return std::nullopt;
        }
        if (path.find('\0') != std::string_view::npos) {
            error = "unix socket path contains a NUL byte";
            return std::nullopt;
        }
        un.sun_family = AF_UNIX;
        std::memcpy(un.sun_path, path.data(), path.size());
        std::memcpy(&a.storage_, &un, sizeof un);
        a.length_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
        a.kind_ = Kind::unix_path;
        return a;
    }

    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        error = "expected host:port, [v6]:port or unix:/path, not '" + std::string(text) + "'";
        return std::nullopt;
    }
    std::string_view host = text.substr(0, colon);
    std::uint16_t port = 0;
    if (!parse_port(text.substr(colon + 1), port)) {
        error = "bad port '" + std::string(text.substr(colon + 1)) + "' (0-65535)";
        return std::nullopt;
    }
    if (host.starts_with('[')) {
        if (!host.ends_with(']')) {
            error = "an IPv6 address is written [addr]:port";
            return std::nullopt;
        }
        const std::string literal(host.substr(1, host.size() - 2));
        sockaddr_in6 in6{};
        in6.sin6_family = AF_INET6;
        in6.sin6_port = htons(port);
        if (inet_pton(AF_INET6, literal.c_str(), &in6.sin6_addr) != 1) {
            error = "bad IPv6 address '" + literal + "'";
            return std::nullopt;
        }
        std::memcpy(&a.storage_, &in6, sizeof in6);
        a.length_ = sizeof in6;
        a.kind_ = Kind::ipv6;
        return a;
    }
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    if (host == "*") {
        in.sin_addr.s_addr = htonl(INADDR_ANY);
    } else {
        const std::string literal(host);
        if (host.empty() || inet_pton(AF_INET, literal.c_str(), &in.sin_addr) != 1) {
            error = "bad IPv4 address '" + literal + "' (numeric, or * for any)";
            return std::nullopt;
        }
    }
    std::memcpy(&a.storage_, &in, sizeof in);
    a.length_ = sizeof in;
    a.kind_ = Kind::ipv4;
    return a;
}

std::uint16_t Address::port() const {
    switch (kind_) {
    case Kind::ipv4:
        return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
    case Kind::ipv6:
        return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
    case Kind::unix_path:
        return 0;
    }
    return 0;
}

void Address::set_port(std::uint16_t port) {
    if (kind_ == Kind::ipv4) reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
    if (kind_ == Kind::ipv6) reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
}

std::string_view Address::path() const {
    if (kind_ != Kind::unix_path) return {};
    const char* p = reinterpret_cast<const sockaddr_un*>(&storage_)->sun_path;
    return {p, strnlen(p, sizeof(sockaddr_un::sun_path))};
}

std::string Address::to_string() const {
    char text[INET6_ADDRSTRLEN] = {};
    switch (kind_) {
    case Kind::ipv4:
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, text,
                  sizeof text);
        return std::string(text) + ":" + std::to_string(port());
    case Kind::ipv6:
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, text,
                  sizeof text);
        return "[" + std::string(text) + "]:" + std::to_string(port());
    case Kind::unix_path:
        return "unix:" + std::string(path());
    }
    return {};
}

std::optional<Address> Address::of_socket(int fd) {
    Address a;
    a.length_ = sizeof a.storage_;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&a.storage_), &a.length_) != 0)
        return std::nullopt;
    switch (a.storage_.ss_family) {
    case AF_INET:
        a.kind_ = Kind::ipv4;
        break;
    case AF_INET6:
        a.kind_ = Kind::ipv6;
        break;
    case AF_UNIX:
        a.kind_ = Kind::unix_path;
        break;
    default:
        return std::nullopt;
    }
    return a;
}

bool operator==(const Address& a, const Address& b) {
    return a.kind_ == b.kind_ && a.length_ == b.length_ &&
           std::memcmp(&a.storage_, &b.storage_, a.length_) == 0;
}

} // namespace weft
