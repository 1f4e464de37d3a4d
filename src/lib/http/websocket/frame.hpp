#pragma once
// What both ends of a WebSocket frame share (RFC 6455 §5.2, §7.4): opcodes,
// close codes, and which close codes a peer may put in its close frame.

#include <cstddef>
#include <cstdint>

namespace weft::http::websocket {

enum class Opcode : std::uint8_t {
    continuation = 0x0,
    text = 0x1,
    binary = 0x2,
    close = 0x8,
    ping = 0x9,
    pong = 0xA,
};

constexpr bool is_control(Opcode opcode) {
    return (static_cast<std::uint8_t>(opcode) & 0x8) != 0;
}

// Close codes (§7.4.1) weft sends or fails a connection with.
enum class CloseCode : std::uint16_t {
    normal = 1000,
    going_away = 1001,
    protocol_error = 1002,
    unsupported_data = 1003,
    no_status = 1005, // never on the wire: a close frame without a code
    invalid_payload = 1007,
    policy_violation = 1008,
    message_too_big = 1009,
    internal_error = 1011,
};

// A control frame's payload is at most this long (§5.5).
inline constexpr std::size_t kMaxControlPayload = 125;

// Whether a peer may send `code` in a close frame (§7.4.1, §7.4.2): the
// defined codes 1000-1003 and 1007-1011, the three IANA registered since
// (1012 service restart, 1013 try again later, 1014 bad gateway: Node's `ws`
// accepts them too), and 3000-4999 (registered and private). 1004 is
// reserved; 1005, 1006 and 1015 must never be sent; the rest of 0-2999 is
// unassigned. A close frame with any other code fails the
// connection with 1002 (as Autobahn's cases 7.9 expect).
constexpr bool peer_may_send(std::uint16_t code) {
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

} // namespace weft::http::websocket
