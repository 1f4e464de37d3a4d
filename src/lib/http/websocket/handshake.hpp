#pragma once
// The server's side of the WebSocket opening handshake (RFC 6455 §4.2): the
// client's key checked, the Sec-WebSocket-Accept answering it, and the
// subprotocol chosen. Pure functions; nothing allocated.

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace weft::http::websocket {

// Sec-WebSocket-Key must be "a randomly selected 16-byte value that has been
// base64-encoded" (§4.1): 22 base64 characters, then "==". The 22nd carries
// two bits of the key and four zero bits, so only A, Q, g or w may stand
// there (RFC 4648 §3.5: weft takes the canonical encoding only, which every
// client's encoder makes). A bad key is a 400 (§4.2.1).
bool valid_key(std::string_view key);

// Sec-WebSocket-Accept: base64(SHA-1(key + the GUID 258EAFA5-E914-47DA-95CA-
// C5AB0DC85B11)) (§4.2.2), 28 characters.
using AcceptValue = std::array<char, 28>;
AcceptValue accept_value(std::string_view key);

// The subprotocol to answer with: the first of `configured` (in the order the
// configuration lists them) that the client offers in any of its
// Sec-WebSocket-Protocol values (comma-separated names, with optional
// whitespace around them; names compared exactly, as the client compares the
// answer with what it sent). The server's order decides, not the client's:
// the RFC leaves the choice to the server (§4.2.2 /subprotocol/), and the
// configuration is where a site says which protocol it prefers. Empty: none
// in common, and the response then has no Sec-WebSocket-Protocol (§4.2.2;
// the client decides whether to go on).
std::string_view select_subprotocol(std::span<const std::string_view> offered,
                                    std::span<const std::string> configured);

} // namespace weft::http::websocket
