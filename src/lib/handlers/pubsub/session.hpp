#pragma once
// A subscriber after its handshake: a WebSocket or an event stream that
// owns its client's fd, watched by the loop (an FdWatcher) with one Timer
// (the ping, then the close's wait), and no coroutine: reading, answering
// pings, flushing queued messages and closing all run in loop callbacks,
// never blocking.
//
// Its queue holds references to Pieces (hub.hpp), bounded by max_queued
// bytes: past it a WebSocket closes with 1008, an event stream ends, and
// the access-log note says why. A WebSocket reads client frames into the
// hub's scratch (FrameReader): a ping is answered by a pong queued after
// the bytes before it (never inside a frame partly written), a close by
// its echo, then the fd closes; a data message is published to its topic
// with clients_publish (MessageAssembler: its buffer, max_message bytes,
// exists only while a message is in progress; past it 1009), else closes
// with 1008; a protocol error closes with the reader's code. Each `ping`
// interval a WebSocket is pinged, and one that sent no frame at all for two
// intervals is closed (1001 "ping timeout"); an event stream gets a comment
// line. Closing: the close frame is queued after what is partly written
// (the rest dropped), and the fd closes when the client's close (or EOF)
// comes, or 2 s later; what the client sends meanwhile is read and
// dropped, so the close is not turned into a reset.
//
// A session points at its topic space and hub, never at its handler: a
// reload frees the handler while the session stays connected.

#include "handlers/pubsub/hub.hpp"
#include "handlers/pubsub/topics.hpp"
#include "http/detached.hpp"
#include "http/session_log.hpp"
#include "http/websocket/frame_reader.hpp"
#include "http/websocket/message_assembler.hpp"
#include "loop/loop.hpp"
#include "loop/timer_wheel.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::handlers::pubsub {

// What a session keeps of its handler's configuration.
struct SessionSettings {
    std::uint64_t max_queued = 256 << 10;
    std::uint64_t max_message = 64 << 10;
    std::uint32_t ping_ms = 30'000; // 0: none
    bool clients_publish = false;
    Limits limits; // for what its client publishes
};

class Session final : public http::Detached {
public:
    enum class Kind : std::uint8_t { websocket, sse };
    // How long a close waits for the client's close.
    static constexpr std::uint32_t kCloseWaitMs = 2000;

    Session(Kind kind, int fd, std::shared_ptr<TopicSpace> space, LoopHub& hub,
            const SessionSettings& settings);
    ~Session() override;
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Before start(): subscribes to `name`; the kept messages with an id
    // above `after` are queued first. false: no room for a topic (503).
    bool join(std::string_view name, std::uint64_t after);
    // Bytes the client sent after its request, read before the socket's.
    void set_received(std::string_view bytes) { received_.assign(bytes); }
    // Takes the fd over (http/detached.hpp).
    void start(std::unique_ptr<http::SessionLog> log) override;
    void keep(std::unique_ptr<http::LimitHold> count) override;

    // The hub's: a message of its topic; one writev of what is queued; the
    // loop stops.
    void deliver(Piece& piece);
    void flush();
    void stop();
    // The stop's grace is over: the fd closes now, answered or not.
    void end_now();

    Kind kind() const { return kind_; }
    std::uint64_t queued_bytes() const { return queued_bytes_; }

    // The hub's list of its topic's sessions on this loop, and its dirty mark.
    Session* prev = nullptr;
    Session* next = nullptr;
    bool dirty = false;

private:
    enum class State : std::uint8_t { open, closing };
    struct Entry {
        Piece* piece; // null: static bytes
        const char* data;
        std::uint32_t size;
    };
    struct Watch {
        FdWatcher watcher;
        Session* session;
    };
    struct Tick {
        Timer timer;
        Session* session;
    };
    struct Assembly; // a client's message in progress

    static void on_ready(FdWatcher& watcher, std::uint8_t ready);
    static void on_timer(Timer& timer);
    void ready(std::uint8_t ready);
    void tick();
    // Each returns false when the session has ended (and is deleted).
    bool read_input(bool peer_closed);
    bool consume(std::span<std::uint8_t> bytes);
    bool on_control(const http::websocket::FrameReader::Step& step);
    bool on_data(const http::websocket::FrameReader::Step& step);
    // Queues bytes; false (and nothing queued) when max_queued would pass.
    bool push(Piece* piece, std::string_view bytes, bool always = false);
    bool push_control(http::websocket::Opcode opcode, std::span<const std::uint8_t> payload);
    // WebSocket: the close frame goes after what is partly sent, the rest
    // is dropped, and the fd closes once the client answers or in 2 s.
    void close_with(http::websocket::CloseCode code, std::string_view reason,
                    std::uint16_t note_code, const char* note);
    // Ends the session now: logs, closes the fd, deletes this.
    void finish(std::uint16_t note_code, const char* note);
    void leave();
    void drop_queue(bool keep_partial);
    void release(Entry& entry);
    void arm(std::uint32_t ms);
    void send_soon();

    Watch watch_;
    Tick tick_;
    const int fd_;
    const Kind kind_;
    State state_ = State::open;
    bool started_ = false;     // the loop handed the fd over (first on_ready)
    bool peer_closed_ = false; // the client's close frame came
    bool heard_ = true;        // a frame came since the last ping tick
    std::uint8_t missed_ = 0;  // ping ticks with nothing heard
    std::uint16_t note_code_ = 0;
    const char* note_ = "";
    std::uint32_t sent_ = 0; // bytes of the first entry already written
    std::shared_ptr<TopicSpace> space_;
    LoopHub& hub_;
    Topic* topic_ = nullptr;         // while subscribed
    std::uint64_t serial_ = 0;       // its topic's, the key of its hub's list
    std::uint64_t seen_through_ = 0; // deliveries up to this id came as history
    std::uint64_t queued_bytes_ = 0;
    std::uint64_t bytes_sent_ = 0;
    std::vector<Entry> queue_;
    SessionSettings settings_;
    std::unique_ptr<http::SessionLog> log_;
    std::unique_ptr<http::LimitHold> limit_; // the route's limit_conn count, if it has one
    std::string received_;
    std::unique_ptr<Assembly> assembly_;
    http::websocket::FrameReader reader_;
};

} // namespace weft::handlers::pubsub
