#include "util/md5.hpp"

#include <algorithm>
#include <cstring>

namespace weft {

namespace {

// Per round: the left rotations (RFC 1321 §3.4).
constexpr std::uint32_t kShift[4][4] = {
    {7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};

// T[i] = floor(2^32 * abs(sin(i + 1))), the table of RFC 1321 §3.4.
constexpr std::uint32_t kSine[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

constexpr std::uint32_t rotate_left(std::uint32_t x, std::uint32_t n) {
    return x << n | x >> (32 - n);
}

} // namespace

void Md5::block(const std::uint8_t* bytes) {
    std::uint32_t x[16];
    for (int i = 0; i < 16; ++i)
        x[i] = std::uint32_t{bytes[4 * i]} | std::uint32_t{bytes[4 * i + 1]} << 8 |
               std::uint32_t{bytes[4 * i + 2]} << 16 | std::uint32_t{bytes[4 * i + 3]} << 24;
    std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
    for (int i = 0; i < 64; ++i) {
        const int round = i / 16;
        std::uint32_t f;
        int word;
        switch (round) {
        case 0:
            f = (b & c) | (~b & d);
            word = i;
            break;
        case 1:
            f = (b & d) | (c & ~d);
            word = (5 * i + 1) % 16;
            break;
        case 2:
            f = b ^ c ^ d;
            word = (3 * i + 5) % 16;
            break;
        default:
            f = c ^ (b | ~d);
            word = (7 * i) % 16;
            break;
        }
        const std::uint32_t next =
            b + rotate_left(a + f + kSine[i] + x[word], kShift[round][i % 4]);
        a = d;
        d = c;
        c = b;
        b = next;
    }
    state_[0] += a;
    state_[1] += b;
    state_[2] += c;
    state_[3] += d;
}

Md5::Digest Md5::finish() {
    pad();
    Digest digest;
    for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 4; ++k)
            digest[4 * i + k] = static_cast<std::uint8_t>(state_[i] >> (8 * k));
    return digest;
}

std::optional<std::string> apr1_hash(std::string_view password, std::string_view setting) {
    constexpr std::string_view kMagic = "$apr1$";
    if (!setting.starts_with(kMagic)) return std::nullopt;
    std::string_view salt = setting.substr(kMagic.size());
    salt = salt.substr(0, std::min(salt.find('$'), std::size_t{8}));

    Md5 alternate;
    alternate.update(password);
    alternate.update(salt);
    alternate.update(password);
    Md5::Digest final = alternate.finish();

    Md5 first;
    first.update(password);
    first.update(kMagic);
    first.update(salt);
    for (std::size_t left = password.size(); left > 0; left -= std::min(left, std::size_t{16}))
        first.update(final.data(), std::min(left, std::size_t{16}));
    // For each bit of the length, low first: a zero byte for a 1, the
    // password's first byte for a 0.
    const std::uint8_t zero = 0;
    for (std::size_t bits = password.size(); bits != 0; bits >>= 1)
        if (bits & 1)
            first.update(&zero, 1);
        else
            first.update(password.substr(0, 1));
    final = first.finish();

    // 1000 rounds, to make each guess cost more.
    for (int i = 0; i < 1000; ++i) {
        Md5 round;
        if (i & 1)
            round.update(password);
        else
            round.update(final.data(), final.size());
        if (i % 3) round.update(salt);
        if (i % 7) round.update(password);
        if (i & 1)
            round.update(final.data(), final.size());
        else
            round.update(password);
        final = round.finish();
    }

    // 22 characters of crypt's base64 (its own alphabet, low bits first), the
    // bytes taken in this order.
    static constexpr char kCrypt64[] =
        "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    std::string out;
    out.reserve(kMagic.size() + salt.size() + 1 + 22);
    out.append(kMagic).append(salt).push_back('$');
    const auto put = [&](std::uint32_t value, int characters) {
        for (; characters > 0; --characters, value >>= 6) out += kCrypt64[value & 63];
    };
    static constexpr int kOrder[5][3] = {
        {0, 6, 12}, {1, 7, 13}, {2, 8, 14}, {3, 9, 15}, {4, 10, 5}};
    for (const auto& bytes : kOrder)
        put(std::uint32_t{final[bytes[0]]} << 16 | std::uint32_t{final[bytes[1]]} << 8 |
                final[bytes[2]],
            4);
    put(final[11], 2);
    return out;
}

} // namespace weft
