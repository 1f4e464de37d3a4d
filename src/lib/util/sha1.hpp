#pragma once
// SHA-1 (RFC 3174) and HMAC-SHA1 (RFC 2104): htpasswd's {SHA} lines, and
// the keyed digest under which Basic authentication remembers credentials
// it verified (http/basic_auth.hpp); the WebSocket handshake will want it
// too. Not for new password hashes.

#include "util/block_hash.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace weft {

class Sha1 : public BlockHash<Sha1, true> {
public:
    using Digest = std::array<std::uint8_t, 20>;

    // The digest; the object is spent.
    Digest finish();

    static Digest of(std::string_view bytes) {
        Sha1 sha;
        sha.update(bytes);
        return sha.finish();
    }

private:
    friend class BlockHash<Sha1, true>;
    void block(const std::uint8_t* bytes);

    std::uint32_t state_[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
};

// HMAC-SHA1 of the concatenated `parts` under `key`.
Sha1::Digest hmac_sha1(std::string_view key, std::initializer_list<std::string_view> parts);

} // namespace weft
