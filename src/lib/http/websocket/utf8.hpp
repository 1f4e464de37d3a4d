#pragma once
// Incremental UTF-8 validation (RFC 3629; Unicode 15 §3.9, Table 3-7) for
// WebSocket text messages, which must be valid UTF-8 as a whole (RFC 6455
// §8.1) though a fragment or a read may end inside a character: the state
// carries across feed() calls. Overlong forms, surrogates (U+D800-U+DFFF),
// code points above U+10FFFF and bytes C0, C1, F5-FF are invalid as soon as
// the byte that makes them so arrives, so a bad message fails early (1007).

#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::http::websocket {

class Utf8Validator {
public:
    // Validates the next bytes; false once the text so far cannot begin valid
    // UTF-8 (and ever after, until reset()).
    bool feed(std::span<const std::uint8_t> bytes);
    // The text so far is valid and ends between characters: a message may end
    // here.
    bool complete() const { return state_ == kAccept; }
    bool failed() const { return state_ == kReject; }
    void reset() { state_ = kAccept; }

    // The states of the automaton (utf8.cpp): between characters, rejected,
    // and the seven "inside a character" states.
    static constexpr std::uint8_t kAccept = 0;
    static constexpr std::uint8_t kReject = 1;

private:
    std::uint8_t state_ = kAccept;
};

// Whether `bytes` are valid UTF-8 as a whole.
bool is_valid_utf8(std::span<const std::uint8_t> bytes);

} // namespace weft::http::websocket
