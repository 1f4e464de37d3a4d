#include "util/sha1.hpp"

#include <bit>
#include <cstring>

namespace weft {

namespace {

std::uint32_t load_be32(const std::uint8_t* p) {
    return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

} // namespace

void Sha1::compress(const std::uint8_t* block) {
    // The message schedule (§6.1.2 step 1), kept as a 16-word ring.
    std::uint32_t w[16];
    for (unsigned t = 0; t < 16; ++t) w[t] = load_be32(block + 4 * t);
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
    for (unsigned t = 0; t < 80; ++t) {
        if (t >= 16) {
            const std::uint32_t x =
                w[(t - 3) & 15] ^ w[(t - 8) & 15] ^ w[(t - 14) & 15] ^ w[t & 15];
            w[t & 15] = std::rotl(x, 1);
        }
        std::uint32_t f, k;
        if (t < 20) {
            f = (b & c) | (~b & d); // Ch
            k = 0x5A827999;
        } else if (t < 40) {
            f = b ^ c ^ d; // Parity
            k = 0x6ED9EBA1;
        } else if (t < 60) {
            f = (b & c) | (b & d) | (c & d); // Maj
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        const std::uint32_t temp = std::rotl(a, 5) + f + e + k + w[t & 15];
        e = d;
        d = c;
        c = std::rotl(b, 30);
        b = a;
        a = temp;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
}

void Sha1::update(std::span<const std::uint8_t> bytes) {
    length_ += bytes.size();
    const std::uint8_t* p = bytes.data();
    std::size_t left = bytes.size();
    if (block_used_ > 0) {
        const std::size_t n = left < 64 - block_used_ ? left : 64 - block_used_;
        std::memcpy(block_ + block_used_, p, n);
        block_used_ += n;
        p += n;
        left -= n;
        if (block_used_ < 64) return;
        compress(block_);
        block_used_ = 0;
    }
    for (; left >= 64; p += 64, left -= 64) compress(p);
    if (left > 0) std::memcpy(block_, p, left);
    block_used_ = left;
}

Sha1::Digest Sha1::finish() {
    // Padding (§5.1.1): a 1 bit, zeros to 56 bytes mod 64, the bit length.
    const std::uint64_t bits = length_ * 8;
    block_[block_used_++] = 0x80;
    if (block_used_ > 56) {
        std::memset(block_ + block_used_, 0, 64 - block_used_);
        compress(block_);
        block_used_ = 0;
    }
    std::memset(block_ + block_used_, 0, 56 - block_used_);
    for (unsigned i = 0; i < 8; ++i)
        block_[56 + i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
    compress(block_);
    block_used_ = 0;
    Digest digest;
    for (unsigned i = 0; i < 5; ++i)
        for (unsigned j = 0; j < 4; ++j)
            digest[4 * i + j] = static_cast<std::uint8_t>(h_[i] >> (24 - 8 * j));
    return digest;
}

} // namespace weft
