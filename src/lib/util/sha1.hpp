#pragma once
// SHA-1 (FIPS 180-4 §6.1). Broken for collision resistance: weft uses it only
// where a protocol names it (the WebSocket handshake's Sec-WebSocket-Accept),
// never to trust content.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace weft {

class Sha1 {
public:
    using Digest = std::array<std::uint8_t, 20>;

    void update(std::span<const std::uint8_t> bytes);
    void update(std::string_view text) {
        update({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
    }
    // The digest of everything updated; the object is spent afterwards.
    Digest finish();

    static Digest of(std::string_view text) {
        Sha1 sha;
        sha.update(text);
        return sha.finish();
    }

private:
    void compress(const std::uint8_t* block);

    std::uint32_t h_[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    std::uint64_t length_ = 0; // bytes updated
    std::uint8_t block_[64];
    std::size_t block_used_ = 0;
};

} // namespace weft
