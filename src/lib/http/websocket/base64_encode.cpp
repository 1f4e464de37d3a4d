#include "http/websocket/base64_encode.hpp"

namespace weft::http::websocket {

std::size_t base64_encode(std::span<const std::uint8_t> bytes, char* out) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const std::uint8_t* p = bytes.data();
    std::size_t left = bytes.size();
    char* o = out;
    for (; left >= 3; p += 3, left -= 3) {
        const std::uint32_t v = std::uint32_t{p[0]} << 16 | std::uint32_t{p[1]} << 8 | p[2];
        *o++ = kAlphabet[v >> 18];
        *o++ = kAlphabet[(v >> 12) & 63];
        *o++ = kAlphabet[(v >> 6) & 63];
        *o++ = kAlphabet[v & 63];
    }
    if (left > 0) {
        const std::uint32_t v =
            std::uint32_t{p[0]} << 16 | (left == 2 ? std::uint32_t{p[1]} << 8 : 0);
        *o++ = kAlphabet[v >> 18];
        *o++ = kAlphabet[(v >> 12) & 63];
        *o++ = left == 2 ? kAlphabet[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    return static_cast<std::size_t>(o - out);
}

} // namespace weft::http::websocket
