#include "handlers/pubsub/message.hpp"

#include "http/websocket/frame_writer.hpp"

#include <cstring>

namespace weft::handlers::pubsub {

namespace ws = http::websocket;

std::shared_ptr<Message> Message::make(std::span<const std::uint8_t> body, bool text) {
    auto message = std::make_shared<Message>();
    std::uint8_t header[ws::kMaxServerHeader];
    const std::size_t header_size =
        ws::write_frame_header(header, text ? ws::Opcode::text : ws::Opcode::binary, body.size());
    message->header_size_ = static_cast<std::uint8_t>(header_size);
    message->frame_.reserve(header_size + body.size());
    message->frame_.append(reinterpret_cast<const char*>(header), header_size);
    message->frame_.append(reinterpret_cast<const char*>(body.data()), body.size());

    // Each line (ended by \n, \r\n, \r, or the body's end) as "data: LINE\n".
    const std::string_view rest(reinterpret_cast<const char*>(body.data()), body.size());
    std::size_t lines = 1;
    for (std::size_t i = 0; i < rest.size(); ++i)
        if (rest[i] == '\n' || (rest[i] == '\r' && (i + 1 == rest.size() || rest[i + 1] != '\n')))
            ++lines;
    std::string& sse = message->sse_;
    sse.reserve(kIdRoom + rest.size() + lines * 7 + 1);
    sse.assign(kIdRoom, ' ');
    std::size_t start = 0;
    for (std::size_t i = 0;; ++i) {
        if (i == rest.size() || rest[i] == '\n' || rest[i] == '\r') {
            sse += "data: ";
            sse.append(rest.substr(start, i - start));
            sse += '\n';
            if (i == rest.size()) break;
            if (rest[i] == '\r' && i + 1 < rest.size() && rest[i + 1] == '\n') ++i;
            start = i + 1;
        }
    }
    sse += '\n';
    return message;
}

void Message::set_id(std::uint64_t id) {
    id_ = id;
    char digits[20];
    std::size_t n = 0;
    do {
        digits[n++] = static_cast<char>('0' + id % 10);
        id /= 10;
    } while (id);
    const std::size_t length = 4 + n + 1; // "id: " digits "\n"
    char* out = sse_.data() + kIdRoom - length;
    std::memcpy(out, "id: ", 4);
    for (std::size_t i = 0; i < n; ++i) out[4 + i] = digits[n - 1 - i];
    out[4 + n] = '\n';
    sse_start_ = static_cast<std::uint8_t>(kIdRoom - length);
}

} // namespace weft::handlers::pubsub
