#pragma once
// SHA-1 (RFC 3174) and HMAC-SHA1 (RFC 2104): htpasswd's {SHA} lines, and
// the keyed digest under which Basic authentication remembers credentials
// it verified (http/basic_auth.hpp); the WebSocket handshake will want it
// too. Not for new password hashes.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace weft {

class Sha1 {
public:
    using Digest = std::array<std::uint8_t, 20>;

    void update(std::string_view bytes);
    void update(const std::uint8_t* bytes, std::size_t n);
    // The digest; the object is spent.
    Digest finish();

    static Digest of(std::string_view bytes) {
        Sha1 sha;
        sha.update(bytes);
        return sha.finish();
    }

private:
    void block(const std::uint8_t* bytes);

    std::uint32_t state_[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
    std::uint64_t length_ = 0; // bytes so far
    std::uint8_t buffer_[64];
    std::size_t buffered_ = 0;
};

// HMAC-SHA1 of the concatenated `parts` under `key`.
Sha1::Digest hmac_sha1(std::string_view key, std::initializer_list<std::string_view> parts);

} // namespace weft
