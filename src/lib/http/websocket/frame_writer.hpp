#pragma once
// The frames a WebSocket server sends (RFC 6455 §5.2): unmasked (§5.1), the
// length in its shortest form. The writers fill the caller's bytes and return
// how many; nothing is allocated. Which close codes a peer may send is
// peer_may_send() in frame.hpp.

#include "http/websocket/frame.hpp"

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace weft::http::websocket {

// A server frame's header: 2 bytes, a 64-bit length, no mask key.
inline constexpr std::size_t kMaxServerHeader = 10;
// A whole control frame: its header and the longest payload.
inline constexpr std::size_t kMaxControlFrame = 2 + kMaxControlPayload;

// The header of a frame of `payload_length` bytes; returns 2, 4 or 10. A
// control frame is never fragmented and carries at most 125 bytes.
inline std::size_t write_frame_header(std::uint8_t* out, Opcode opcode,
                                      std::uint64_t payload_length, bool fin = true) {
    assert(!is_control(opcode) || (fin && payload_length <= kMaxControlPayload));
    assert(payload_length >> 63 == 0);
    out[0] = static_cast<std::uint8_t>((fin ? 0x80 : 0) | static_cast<std::uint8_t>(opcode));
    if (payload_length < 126) {
        out[1] = static_cast<std::uint8_t>(payload_length);
        return 2;
    }
    if (payload_length <= 0xFFFF) {
        out[1] = 126;
        out[2] = static_cast<std::uint8_t>(payload_length >> 8);
        out[3] = static_cast<std::uint8_t>(payload_length);
        return 4;
    }
    out[1] = 127;
    for (unsigned i = 0; i < 8; ++i)
        out[2 + i] = static_cast<std::uint8_t>(payload_length >> (56 - 8 * i));
    return 10;
}

// A close frame's payload (§5.5.1): the code, big-endian, then as much of the
// UTF-8 `reason` as fits in 125 bytes, cut before a character, never inside
// one. `out` holds kMaxControlPayload bytes.
inline std::size_t write_close_payload(std::uint8_t* out, CloseCode code, std::string_view reason) {
    const auto value = static_cast<std::uint16_t>(code);
    out[0] = static_cast<std::uint8_t>(value >> 8);
    out[1] = static_cast<std::uint8_t>(value);
    std::size_t length = reason.size();
    if (length > kMaxControlPayload - 2) {
        length = kMaxControlPayload - 2;
        while (length > 0 && (static_cast<std::uint8_t>(reason[length]) & 0xC0) == 0x80) --length;
    }
    std::memcpy(out + 2, reason.data(), length);
    return 2 + length;
}

// A whole ping, pong or close frame; `out` holds kMaxControlFrame bytes.
inline std::size_t write_control_frame(std::uint8_t* out, Opcode opcode,
                                       std::span<const std::uint8_t> payload) {
    const std::size_t header = write_frame_header(out, opcode, payload.size());
    if (!payload.empty()) std::memcpy(out + header, payload.data(), payload.size());
    return header + payload.size();
}

// A whole close frame with `code` and `reason` (truncated as above).
inline std::size_t write_close_frame(std::uint8_t* out, CloseCode code, std::string_view reason) {
    const std::size_t length = write_close_payload(out + 2, code, reason);
    return write_frame_header(out, Opcode::close, length) + length;
}

} // namespace weft::http::websocket
