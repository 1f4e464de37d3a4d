#pragma once
// Base64 (RFC 4648 §4: the standard alphabet, padded), as Basic
// authentication's credentials, htpasswd's {SHA} lines and the WebSocket
// handshake's Sec-WebSocket-Accept carry it.
//
// Decoding is strict (RFC 4648 §3.3, §3.5): only the alphabet, the length a
// multiple of 4, '=' only as the last one or two characters, and the bits
// padding leaves over zero. Anything else is refused: a lenient decoder
// reads two different texts as one, and what a client sends is never fixed
// up.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace weft::base64 {

// What `n` bytes encode to, in characters.
constexpr std::size_t encoded_size(std::size_t n) {
    return (n + 2) / 3 * 4;
}
// The most bytes `n` characters decode to.
constexpr std::size_t decoded_size_max(std::size_t n) {
    return n / 4 * 3;
}

// Writes encoded_size(bytes.size()) characters to `out` (no NUL); returns
// that count.
std::size_t encode(std::string_view bytes, char* out);
std::string encode(std::string_view bytes);

// Decodes `text` into `out` (room for `capacity` bytes): the bytes written,
// or nullopt for text that is not strict base64 or does not fit.
std::optional<std::size_t> decode(std::string_view text, char* out, std::size_t capacity);

} // namespace weft::base64
