#pragma once
// Base64 encoding (RFC 4648 §4, with padding), for Sec-WebSocket-Accept.
// Kept here until util/ has a base64 of its own to merge it with.

#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::http::websocket {

constexpr std::size_t base64_encoded_size(std::size_t bytes) {
    return (bytes + 2) / 3 * 4;
}

// Writes base64_encoded_size(bytes.size()) characters to `out`, no NUL;
// returns that count.
std::size_t base64_encode(std::span<const std::uint8_t> bytes, char* out);

} // namespace weft::http::websocket
