#pragma once
// One published message, built once at publish and shared by every loop
// that delivers it: the WebSocket frame and the Server-Sent Events event
// are made here, so a delivery copies no byte and formats nothing.
//
// A message is immutable once shared; until then (Message::make, then the
// TopicSpace's set_id under its lock) its id may be set.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace weft::handlers::pubsub {

class Message {
public:
    // `text`: a text frame (the bytes are UTF-8), else binary.
    static std::shared_ptr<Message> make(std::span<const std::uint8_t> body, bool text);
    static std::shared_ptr<Message> make(std::string_view body, bool text) {
        return make({reinterpret_cast<const std::uint8_t*>(body.data()), body.size()}, text);
    }

    // Writes the SSE `id:` line; before the message is shared.
    void set_id(std::uint64_t id);
    std::uint64_t id() const { return id_; }

    // The whole unmasked frame (header and payload).
    std::string_view websocket() const { return frame_; }
    // `id: N`, each line of the body as `data: ...` (lines end at \n, \r\n
    // or \r), then an empty line.
    std::string_view sse() const { return std::string_view(sse_).substr(sse_start_); }
    // The bytes it holds, both encodings (whatever its id).
    std::size_t bytes_held() const { return frame_.size() + sse_.size(); }
    // The body as published.
    std::string_view body() const { return std::string_view(frame_).substr(header_size_); }

private:
    // Room before the data lines for "id: " + 20 digits + "\n".
    static constexpr std::size_t kIdRoom = 25;

    std::uint64_t id_ = 0;
    std::string frame_;
    std::string sse_; // kIdRoom bytes, the id line right-aligned in them, then data lines
    std::uint8_t sse_start_ = kIdRoom;
    std::uint8_t header_size_ = 0;
};

} // namespace weft::handlers::pubsub
