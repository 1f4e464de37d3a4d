#include "util/sha1.hpp"

#include <algorithm>
#include <cstring>

namespace weft {

namespace {

constexpr std::uint32_t rotate_left(std::uint32_t x, std::uint32_t n) {
    return x << n | x >> (32 - n);
}

} // namespace

void Sha1::block(const std::uint8_t* bytes) {
    std::uint32_t w[80];
    for (int i = 0; i < 16; ++i)
        w[i] = std::uint32_t{bytes[4 * i]} << 24 | std::uint32_t{bytes[4 * i + 1]} << 16 |
               std::uint32_t{bytes[4 * i + 2]} << 8 | std::uint32_t{bytes[4 * i + 3]};
    for (int i = 16; i < 80; ++i)
        w[i] = rotate_left(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3], e = state_[4];
    for (int i = 0; i < 80; ++i) {
        std::uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdc;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6;
        }
        const std::uint32_t next = rotate_left(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rotate_left(b, 30);
        b = a;
        a = next;
    }
    state_[0] += a;
    state_[1] += b;
    state_[2] += c;
    state_[3] += d;
    state_[4] += e;
}

Sha1::Digest Sha1::finish() {
    pad();
    Digest digest;
    for (int i = 0; i < 5; ++i)
        for (int k = 0; k < 4; ++k)
            digest[4 * i + k] = static_cast<std::uint8_t>(state_[i] >> (24 - 8 * k));
    return digest;
}

Sha1::Digest hmac_sha1(std::string_view key, std::initializer_list<std::string_view> parts) {
    std::uint8_t block[64] = {};
    if (key.size() > sizeof block) {
        const Sha1::Digest short_key = Sha1::of(key);
        std::memcpy(block, short_key.data(), short_key.size());
    } else {
        std::memcpy(block, key.data(), key.size());
    }
    std::uint8_t pad[64];
    for (std::size_t i = 0; i < sizeof pad; ++i) pad[i] = block[i] ^ 0x36;
    Sha1 inner;
    inner.update(pad, sizeof pad);
    for (std::string_view part : parts) inner.update(part);
    const Sha1::Digest inner_digest = inner.finish();
    for (std::size_t i = 0; i < sizeof pad; ++i) pad[i] = block[i] ^ 0x5c;
    Sha1 outer;
    outer.update(pad, sizeof pad);
    outer.update(inner_digest.data(), inner_digest.size());
    return outer.finish();
}

} // namespace weft
