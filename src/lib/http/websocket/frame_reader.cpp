#include "http/websocket/frame_reader.hpp"

#include "http/websocket/utf8.hpp"

#include <algorithm>
#include <cstring>

namespace weft::http::websocket {

// Every WebSocket connection holds one, idle subscribers included (issue 18
// budgets 2 KiB for an idle subscriber): the control payload is most of it.
static_assert(sizeof(FrameReader) <= 168);

unsigned unmask(std::uint8_t* data, std::size_t size, const std::uint8_t mask[4], unsigned phase) {
    // The mask as it lines up with data[0], twice: data[i] takes key[i & 7].
    std::uint8_t key[8];
    for (unsigned i = 0; i < 8; ++i) key[i] = mask[(phase + i) & 3];
    std::uint64_t word_key;
    std::memcpy(&word_key, key, sizeof word_key);
    std::size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        std::uint64_t word;
        std::memcpy(&word, data + i, sizeof word);
        word ^= word_key;
        std::memcpy(data + i, &word, sizeof word);
    }
    for (; i < size; ++i) data[i] ^= key[i & 7];
    return static_cast<unsigned>((phase + size) & 3);
}

namespace {

bool known_opcode(std::uint8_t opcode) {
    switch (static_cast<Opcode>(opcode)) {
    case Opcode::continuation:
    case Opcode::text:
    case Opcode::binary:
    case Opcode::close:
    case Opcode::ping:
    case Opcode::pong:
        return true;
    }
    return false;
}

// Bytes of extended length a 7-bit length announces (§5.2).
unsigned extended_length_bytes(std::uint8_t length7) {
    return length7 == 127 ? 8 : length7 == 126 ? 2 : 0;
}

// A close frame's payload: nothing, or a code a peer may send and a UTF-8
// reason (§5.5.1, §7.1.6).
bool check_close(std::span<const std::uint8_t> payload, CloseCode& error) {
    if (payload.empty()) return true;
    error = CloseCode::protocol_error;
    if (payload.size() == 1) return false;
    if (!peer_may_send(static_cast<std::uint16_t>(payload[0] << 8 | payload[1]))) return false;
    error = CloseCode::invalid_payload;
    return is_valid_utf8(payload.subspan(2));
}

FrameReader::Step need_more(std::size_t consumed) {
    FrameReader::Step step;
    step.consumed = consumed;
    return step;
}

} // namespace

FrameReader::Step FrameReader::fail(std::size_t consumed, CloseCode code) {
    failed_ = true;
    error_ = code;
    Step step;
    step.event = Event::fail;
    step.consumed = consumed;
    step.error = code;
    return step;
}

bool FrameReader::check_start() {
    const std::uint8_t first = header_[0];
    const std::uint8_t second = header_[1];
    if (first & 0x70) return false; // RSV1-3: no extension was negotiated
    if (!known_opcode(first & 0x0F)) return false;
    if (!(second & 0x80)) return false; // a client masks every frame (§5.1)
    fin_ = (first & 0x80) != 0;
    opcode_ = static_cast<Opcode>(first & 0x0F);
    const std::uint8_t length7 = second & 0x7F;
    if (is_control(opcode_)) {
        if (!fin_ || length7 > kMaxControlPayload) return false;
    } else if (opcode_ == Opcode::continuation) {
        if (!in_message()) return false;
    } else {
        if (in_message()) return false;
        message_ = opcode_;
    }
    part_ = Part::length;
    header_want_ = static_cast<std::uint8_t>(2 + extended_length_bytes(length7));
    return true;
}

bool FrameReader::check_length() {
    const std::uint8_t length7 = header_[1] & 0x7F;
    std::uint64_t length = length7;
    if (length7 == 126) {
        length = std::uint64_t{header_[2]} << 8 | header_[3];
        if (length < 126) return false; // not the shortest form
    } else if (length7 == 127) {
        length = 0;
        for (unsigned i = 2; i < 10; ++i) length = length << 8 | header_[i];
        if (length >> 63) return false;     // §5.2: the most significant bit is 0
        if (length <= 0xFFFF) return false; // not the shortest form
    }
    remaining_ = length;
    part_ = Part::mask;
    header_want_ = static_cast<std::uint8_t>(header_want_ + 4);
    return true;
}

std::size_t FrameReader::read_header(std::span<const std::uint8_t> input, bool& bad) {
    std::size_t used = 0;
    while (part_ != Part::payload) {
        if (header_have_ < header_want_) {
            const std::size_t n =
                std::min<std::size_t>(header_want_ - header_have_, input.size() - used);
            std::memcpy(header_ + header_have_, input.data() + used, n);
            header_have_ = static_cast<std::uint8_t>(header_have_ + n);
            used += n;
            if (header_have_ < header_want_) break;
        }
        switch (part_) {
        case Part::start:
            bad = !check_start();
            break;
        case Part::length:
            bad = !check_length();
            break;
        case Part::mask:
            std::memcpy(mask_, header_ + header_have_ - 4, 4);
            mask_phase_ = 0;
            control_length_ = 0;
            part_ = Part::payload;
            break;
        case Part::payload:
            break;
        }
        if (bad) break;
    }
    return used;
}

void FrameReader::end_frame() {
    part_ = Part::start;
    header_have_ = 0;
    header_want_ = 2;
}

FrameReader::Step FrameReader::next(std::span<std::uint8_t> input) {
    if (failed_) return fail(0, error_);
    std::size_t used = 0;
    if (part_ != Part::payload) {
        bool bad = false;
        used = read_header(input, bad);
        if (bad) return fail(used, CloseCode::protocol_error);
        if (part_ != Part::payload) return need_more(used);
    }
    return is_control(opcode_) ? control_step(input, used) : data_step(input, used);
}

FrameReader::Step FrameReader::control_step(std::span<std::uint8_t> input, std::size_t used) {
    const std::size_t n = std::min<std::uint64_t>(remaining_, input.size() - used);
    std::uint8_t* to = control_ + control_length_;
    std::memcpy(to, input.data() + used, n);
    mask_phase_ = static_cast<std::uint8_t>(unmask(to, n, mask_, mask_phase_));
    control_length_ = static_cast<std::uint8_t>(control_length_ + n);
    remaining_ -= n;
    used += n;
    if (remaining_ > 0) return need_more(used);
    end_frame();
    const std::span<const std::uint8_t> payload(control_, control_length_);
    CloseCode error = CloseCode::normal;
    if (opcode_ == Opcode::close && !check_close(payload, error)) return fail(used, error);
    Step step;
    step.event = Event::control;
    step.consumed = used;
    step.opcode = opcode_;
    step.payload = payload;
    return step;
}

FrameReader::Step FrameReader::data_step(std::span<std::uint8_t> input, std::size_t used) {
    const std::size_t n = std::min<std::uint64_t>(remaining_, input.size() - used);
    // A header completed by this call is handed out even with no payload
    // yet (an empty piece, its frame_remaining), so a size limit fails at
    // the header: a client announcing 2^63 bytes need not send one of them.
    if (n == 0 && remaining_ > 0 && used == 0) return need_more(used);
    std::uint8_t* piece = input.data() + used;
    mask_phase_ = static_cast<std::uint8_t>(unmask(piece, n, mask_, mask_phase_));
    remaining_ -= n;
    Step step;
    step.event = Event::data;
    step.consumed = used + n;
    step.opcode = message_;
    step.payload = std::span<const std::uint8_t>(piece, n);
    step.message_start = !message_started_;
    step.message_end = remaining_ == 0 && fin_;
    step.frame_remaining = remaining_;
    message_started_ = true;
    if (remaining_ == 0) {
        end_frame();
        if (fin_) {
            message_ = Opcode::continuation;
            message_started_ = false;
        }
    }
    return step;
}

} // namespace weft::http::websocket
