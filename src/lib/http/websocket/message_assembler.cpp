#include "http/websocket/message_assembler.hpp"

#include <cstring>

namespace weft::http::websocket {

MessageStatus MessageCheck::add(const FrameReader::Step& piece) {
    if (error_ != CloseCode::normal) return MessageStatus::fail;
    if (piece.message_start) {
        size_ = 0;
        opcode_ = piece.opcode;
        utf8_.reset();
    }
    // What this frame still brings counts now: a frame that announces more
    // than the limit fails before its payload is read.
    const std::uint64_t announced = size_ + piece.payload.size() + piece.frame_remaining;
    if (announced < size_ || announced > max_message_) {
        error_ = CloseCode::message_too_big;
        return MessageStatus::fail;
    }
    size_ += piece.payload.size();
    if (opcode_ == Opcode::text) {
        if (!utf8_.feed(piece.payload) || (piece.message_end && !utf8_.complete())) {
            error_ = CloseCode::invalid_payload;
            return MessageStatus::fail;
        }
    }
    return piece.message_end ? MessageStatus::complete : MessageStatus::partial;
}

MessageStatus MessageAssembler::add(const FrameReader::Step& piece) {
    const std::uint64_t before = piece.message_start ? 0 : check_.size();
    const MessageStatus status = check_.add(piece);
    if (status != MessageStatus::fail && !piece.payload.empty())
        std::memcpy(storage_.data() + before, piece.payload.data(), piece.payload.size());
    return status;
}

} // namespace weft::http::websocket
