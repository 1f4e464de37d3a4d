#pragma once
// A listening or connecting address, as the configuration writes it:
//   127.0.0.1:8080   *:8080 (any IPv4)   [::1]:8080   [::]:8080   unix:/run/weft.sock
// Numeric only: no name resolution.

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft {

class Address {
public:
    enum class Kind : std::uint8_t { ipv4, ipv6, unix_path };

    // The address `text` names, or nullopt with a one-line reason in `error`.
    static std::optional<Address> parse(std::string_view text, std::string& error);

    Kind kind() const { return kind_; }
    int family() const { return storage_.ss_family; }
    const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&storage_); }
    socklen_t length() const { return length_; }

    // The port of an IP address (0 for unix); set_port ignores unix.
    std::uint16_t port() const;
    void set_port(std::uint16_t port);
    // The socket path of a unix address.
    std::string_view path() const;

    // As parse() reads it back: 127.0.0.1:8080, [::1]:8080, unix:/path.
    std::string to_string() const;

    // The address a bound or connected socket has (getsockname).
    static std::optional<Address> of_socket(int fd);

    // The same socket address, byte for byte.
    friend bool operator==(const Address& a, const Address& b);

private:
    sockaddr_storage storage_{};
    socklen_t length_ = 0;
    Kind kind_ = Kind::ipv4;
};

} // namespace weft
