#pragma once
// What MD5 and SHA-1 share (RFC 1321 §3.1-3.2, RFC 3174 §4): input cut
// into 64-byte blocks, and at the end a 1 bit, zeros up to 56 bytes of the
// last block, and the message's length in bits as 8 bytes (little-endian
// for MD5, big-endian for SHA-1). `Hash` compresses a block:
// `void block(const std::uint8_t* bytes)`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace weft {

template <class Hash, bool kBigEndianLength>
class BlockHash {
public:
    void update(std::string_view bytes) {
        update(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    }
    void update(const std::uint8_t* bytes, std::size_t n) {
        length_ += n;
        if (buffered_ > 0) {
            const std::size_t take = std::min(n, sizeof buffer_ - buffered_);
            std::memcpy(buffer_ + buffered_, bytes, take);
            buffered_ += take;
            bytes += take;
            n -= take;
            if (buffered_ < sizeof buffer_) return;
            hash().block(buffer_);
            buffered_ = 0;
        }
        for (; n >= 64; bytes += 64, n -= 64) hash().block(bytes);
        std::memcpy(buffer_, bytes, n);
        buffered_ = n;
    }

protected:
    // The padding and length; then the state is the digest.
    void pad() {
        const std::uint64_t bits = length_ * 8;
        std::uint8_t tail[72] = {0x80};
        const std::size_t size = (buffered_ < 56 ? 56 : 120) - buffered_;
        for (std::size_t i = 0; i < 8; ++i)
            tail[size + i] =
                static_cast<std::uint8_t>(bits >> (kBigEndianLength ? 56 - 8 * i : 8 * i));
        update(tail, size + 8);
    }

private:
    Hash& hash() { return static_cast<Hash&>(*this); }

    std::uint64_t length_ = 0; // bytes so far
    std::uint8_t buffer_[64];
    std::size_t buffered_ = 0;
};

} // namespace weft
