#pragma once
// The frames a WebSocket client sends (RFC 6455 §5), read incrementally over
// whatever bytes are buffered: a frame may be split anywhere across reads.
//
// next() takes the unconsumed input and returns one step: a piece of a data
// message's payload (unmasked in place: a view into the caller's bytes), a
// whole control frame (its payload copied into the reader, at most 125
// bytes), a need for more bytes, or a failure with the close code to send.
// A partial frame header (at most 14 bytes) is kept in the reader, so on
// `need_more` every byte given has been consumed: the caller never holds
// bytes for the reader and needs no bigger buffer than its own. The reader
// allocates nothing; a message need not be whole in memory (see
// message_assembler.hpp to make it so, with a size limit).
//
// What fails, with 1002 (protocol error) unless said: RSV1-3 set (weft
// negotiates no extension), an unknown opcode, an unmasked frame, a length
// not in its shortest form (§5.2: "the minimal number of bytes MUST be used"),
// a 64-bit length with its top bit set, a control frame longer than 125 bytes
// or fragmented, a continuation with no message begun, a text or binary frame
// while a message is unfinished, and a close frame whose payload is one byte,
// whose code a peer may not send (frame.hpp), or whose reason is not UTF-8
// (1007). Each fails at the header byte that shows it, before any payload.
// Text payload is not checked here (message_assembler.hpp does it).
//
// Control frames may come between the fragments of a message (§5.4). After a
// close frame the caller stops reading (§5.5.1); the reader would go on.

#include "http/websocket/frame.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::http::websocket {

class FrameReader {
public:
    enum class Event : std::uint8_t {
        need_more, // all input consumed; call again with more
        data,      // `payload` is a piece of a text or binary message
        control,   // a whole close, ping or pong frame
        fail,      // `error` is the close code; every later call fails too
    };
    struct Step {
        Event event = Event::need_more;
        // Bytes of the input used up; more than 0 but for need_more on empty
        // input and fail after fail.
        std::size_t consumed = 0;
        // data: the message's opcode (text or binary, also for its
        // continuation frames); control: close, ping or pong.
        Opcode opcode = Opcode::continuation;
        // data: in the caller's input, unmasked; control: in the reader,
        // valid until the next call. May be empty: an empty frame, or a data
        // frame's header completed by this call before any of its payload.
        std::span<const std::uint8_t> payload;
        bool message_start = false; // data: the message's first piece
        bool message_end = false;   // data: its last (the FIN frame's last byte)
        // data: payload of the current frame still to come after this piece
        // (so a size limit can fail at the header, not after the bytes).
        std::uint64_t frame_remaining = 0;
        CloseCode error = CloseCode::normal; // fail
    };

    // The longest frame header: 2 bytes, a 64-bit length, the mask key.
    static constexpr std::size_t kMaxHeader = 14;

    Step next(std::span<std::uint8_t> input);

    // A text or binary message has begun and not ended.
    bool in_message() const { return message_ != Opcode::continuation; }
    bool failed() const { return failed_; }

private:
    enum class Part : std::uint8_t { start, length, mask, payload };

    Step fail(std::size_t consumed, CloseCode code);
    // Copies header bytes into header_ and checks each part as it completes
    // (`bad`: a protocol error); returns the bytes taken, with part_ ==
    // payload once the header is whole.
    std::size_t read_header(std::span<const std::uint8_t> input, bool& bad);
    bool check_start();
    bool check_length();
    Step control_step(std::span<std::uint8_t> input, std::size_t used);
    Step data_step(std::span<std::uint8_t> input, std::size_t used);
    void end_frame();

    std::uint64_t remaining_ = 0; // payload of the current frame still to come
    Part part_ = Part::start;
    std::uint8_t header_have_ = 0;
    std::uint8_t header_want_ = 2;
    std::uint8_t header_[kMaxHeader];
    Opcode opcode_ = Opcode::continuation; // the current frame's
    bool fin_ = false;
    bool failed_ = false;
    CloseCode error_ = CloseCode::normal;
    // The message a data frame continues; continuation (none) between messages.
    Opcode message_ = Opcode::continuation;
    bool message_started_ = false; // its first piece has been handed out
    std::uint8_t mask_[4] = {};
    std::uint8_t mask_phase_ = 0; // which mask byte the next payload byte takes
    std::uint8_t control_length_ = 0;
    std::uint8_t control_[kMaxControlPayload];
};

// XORs `size` bytes with the 4-byte `mask`, the first byte with mask[phase]
// (§5.3), eight bytes at a time; returns the phase the next byte takes.
unsigned unmask(std::uint8_t* data, std::size_t size, const std::uint8_t mask[4], unsigned phase);

} // namespace weft::http::websocket
