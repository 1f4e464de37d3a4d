#include "util/base64.hpp"

#include <array>
#include <cstdint>

namespace weft::base64 {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::uint8_t kInvalid = 0xff;

// Each character's 6 bits, or kInvalid ('=' too: padding is read apart).
constexpr std::array<std::uint8_t, 256> kValues = [] {
    std::array<std::uint8_t, 256> values{};
    values.fill(kInvalid);
    for (std::uint8_t i = 0; i < 64; ++i) values[static_cast<unsigned char>(kAlphabet[i])] = i;
    return values;
}();

} // namespace

std::size_t encode(std::string_view bytes, char* out) {
    const auto byte = [&](std::size_t at) {
        return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at]));
    };
    char* o = out;
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t group = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
        for (int shift = 18; shift >= 0; shift -= 6) *o++ = kAlphabet[(group >> shift) & 63];
    }
    const std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        const std::uint32_t group = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
        *o++ = kAlphabet[(group >> 18) & 63];
        *o++ = kAlphabet[(group >> 12) & 63];
        *o++ = rest == 2 ? kAlphabet[(group >> 6) & 63] : '=';
        *o++ = '=';
    }
    return static_cast<std::size_t>(o - out);
}

std::string encode(std::string_view bytes) {
    std::string out(encoded_size(bytes.size()), '\0');
    encode(bytes, out.data());
    return out;
}

std::optional<std::size_t> decode(std::string_view text, char* out, std::size_t capacity) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::size_t padding = 0;
    if (!text.empty() && text.back() == '=') padding = text[text.size() - 2] == '=' ? 2 : 1;
    const std::size_t size = decoded_size_max(text.size()) - padding;
    if (size > capacity) return std::nullopt;
    std::size_t written = 0;
    for (std::size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        const std::size_t count = last ? 4 - padding : 4; // characters that carry bits
        std::uint32_t group = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            std::uint8_t value = 0;
            if (k < count) {
                value = kValues[static_cast<unsigned char>(text[i + k])];
                if (value == kInvalid) return std::nullopt;
            }
            group = group << 6 | value;
        }
        // The bits past the last whole byte must be zero (RFC 4648 §3.5).
        if ((padding == 1 && last && (group & 0xff) != 0) ||
            (padding == 2 && last && (group & 0xffff) != 0))
            return std::nullopt;
        const std::size_t bytes = last ? 3 - padding : 3;
        for (std::size_t k = 0; k < bytes; ++k)
            out[written++] = static_cast<char>((group >> (16 - 8 * k)) & 0xff);
    }
    return written;
}

} // namespace weft::base64
