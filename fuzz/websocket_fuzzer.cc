// libFuzzer target for the WebSocket codec (http/websocket/): the frame
// reader, the message assembler and the UTF-8 validator behind it. The
// input's first byte chooses max_message (1 to 1024 bytes: the limit is
// reached often), its second the number of cuts (low 3 bits), that many
// bytes place the cuts (each a fraction of the rest), then the stream a
// client sent. It is read whole, in the chosen pieces and byte by byte
// (each piece in an allocation of its own size, so ASan sees any read past
// it). Each must give the same messages, control frames and failure (a
// reader's failure at the same byte), and on every step: consumed within
// the piece, all of it on need_more, some of it otherwise, views inside the
// piece; a failure stays; a complete text message is valid UTF-8 and no
// message is longer than max_message.

#include "http/websocket/frame_reader.hpp"
#include "http/websocket/message_assembler.hpp"
#include "http/websocket/utf8.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace weft::http::websocket;
using Event = FrameReader::Event;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool inside(std::span<const std::uint8_t> view, const std::uint8_t* begin, std::size_t size) {
    return view.empty() || (view.data() >= begin && view.data() + view.size() <= begin + size);
}

// Everything a stream read as, in order.
std::string read(const std::uint8_t* stream, std::size_t size, const std::vector<std::size_t>& cuts,
                 std::size_t max_message) {
    std::string transcript;
    FrameReader reader;
    std::vector<std::uint8_t> storage(max_message);
    MessageAssembler assembler(storage);
    std::size_t total = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t end = i < cuts.size() ? cuts[i] : size;
        const std::size_t length = end - start;
        // A buffer of exactly the piece's size: a read past it is ASan's.
        std::unique_ptr<std::uint8_t[]> buffer(new std::uint8_t[length ? length : 1]);
        if (length) std::memcpy(buffer.get(), stream + start, length);
        start = end;
        std::span<std::uint8_t> piece(buffer.get(), length);
        while (!piece.empty()) {
            const FrameReader::Step step = reader.next(piece);
            check(step.consumed <= piece.size());
            check(inside(step.payload, piece.data(), step.consumed) ||
                  step.event == Event::control);
            piece = piece.subspan(step.consumed);
            total += step.consumed;
            switch (step.event) {
            case Event::need_more:
                check(piece.empty());
                break;
            case Event::data: {
                check(step.consumed > 0);
                check(step.opcode == Opcode::text || step.opcode == Opcode::binary);
                const MessageStatus status = assembler.add(step);
                if (status == MessageStatus::fail) {
                    const CloseCode error = assembler.error();
                    check(error == CloseCode::message_too_big ||
                          error == CloseCode::invalid_payload);
                    transcript += "fail " + std::to_string(static_cast<int>(error)) + "\n";
                    return transcript;
                }
                if (status == MessageStatus::complete) {
                    check(assembler.message().size() <= max_message);
                    if (assembler.opcode() == Opcode::text)
                        check(is_valid_utf8(assembler.message()));
                    transcript += (assembler.opcode() == Opcode::text ? "text " : "binary ");
                    transcript.append(reinterpret_cast<const char*>(assembler.message().data()),
                                      assembler.message().size());
                    transcript += '\n';
                }
                break;
            }
            case Event::control:
                check(step.consumed > 0);
                check(step.payload.size() <= kMaxControlPayload);
                check(is_control(step.opcode));
                transcript += std::to_string(static_cast<int>(step.opcode)) + " ";
                transcript.append(reinterpret_cast<const char*>(step.payload.data()),
                                  step.payload.size());
                transcript += '\n';
                break;
            case Event::fail: {
                check(reader.failed());
                check(step.error == CloseCode::protocol_error ||
                      step.error == CloseCode::invalid_payload);
                // A failure stays, and consumes nothing more.
                const FrameReader::Step again = reader.next(piece);
                check(again.event == Event::fail && again.consumed == 0 &&
                      again.error == step.error);
                transcript += "fail " + std::to_string(static_cast<int>(step.error)) + " after " +
                              std::to_string(total) + "\n";
                return transcript;
            }
            }
        }
    }
    return transcript;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t max_message = 1 + (data[0] & 0x7F) * 8;
    std::size_t cut_count = data[1] & 7;
    data += 2;
    size -= 2;
    if (cut_count > size) cut_count = size;
    const std::uint8_t* places = data;
    data += cut_count;
    size -= cut_count;

    std::vector<std::size_t> cuts;
    for (std::size_t i = 0; i < cut_count; ++i) cuts.push_back(size * places[i] / 255);
    std::sort(cuts.begin(), cuts.end());

    const std::string whole = read(data, size, {}, max_message);
    check(read(data, size, cuts, max_message) == whole);
    if (size <= 4096) {
        std::vector<std::size_t> every_byte;
        for (std::size_t i = 1; i < size; ++i) every_byte.push_back(i);
        check(read(data, size, every_byte, max_message) == whole);
    }

    // The validator, on the stream as text: whole and byte by byte agree.
    Utf8Validator all, bytewise;
    const bool ok = all.feed({data, size});
    bool ok_bytewise = true;
    for (std::size_t i = 0; i < size && ok_bytewise; ++i)
        ok_bytewise = bytewise.feed({data + i, 1});
    check(ok == ok_bytewise);
    check(all.complete() == bytewise.complete());
    return 0;
}
