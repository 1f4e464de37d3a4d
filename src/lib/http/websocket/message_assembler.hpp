#pragma once
// A data message from the pieces FrameReader hands out, with `max_message`:
//
// MessageCheck checks a message as its pieces pass, keeping none of them: no
// longer than max_message (else 1009, at the frame header that would pass it,
// before its payload arrives) and, for text, valid UTF-8 across fragments and
// reads (else 1007, at the first byte that makes it invalid, or at the end of
// a message that ends inside a character). For a consumer that streams.
//
// MessageAssembler does the same and copies the pieces into the caller's
// buffer, whose size is max_message: a whole message, or a failure. Neither
// allocates.

#include "http/websocket/frame_reader.hpp"
#include "http/websocket/utf8.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::http::websocket {

enum class MessageStatus : std::uint8_t {
    partial,  // more pieces to come
    complete, // the piece ended the message
    fail,     // error() is the close code
};

class MessageCheck {
public:
    explicit MessageCheck(std::uint64_t max_message) : max_message_(max_message) {}

    // A FrameReader step whose event is data.
    MessageStatus add(const FrameReader::Step& piece);
    // The message's bytes so far (all of it after complete).
    std::uint64_t size() const { return size_; }
    Opcode opcode() const { return opcode_; }
    CloseCode error() const { return error_; }

private:
    std::uint64_t max_message_;
    std::uint64_t size_ = 0;
    Opcode opcode_ = Opcode::continuation;
    CloseCode error_ = CloseCode::normal;
    Utf8Validator utf8_;
};

class MessageAssembler {
public:
    // `storage` outlives the assembler; its size is max_message.
    explicit MessageAssembler(std::span<std::uint8_t> storage)
        : storage_(storage), check_(storage.size()) {}

    MessageStatus add(const FrameReader::Step& piece);
    // After complete, until the next add(): the whole message.
    std::span<const std::uint8_t> message() const {
        return storage_.first(static_cast<std::size_t>(check_.size()));
    }
    Opcode opcode() const { return check_.opcode(); }
    CloseCode error() const { return check_.error(); }

private:
    std::span<std::uint8_t> storage_;
    MessageCheck check_;
};

} // namespace weft::http::websocket
