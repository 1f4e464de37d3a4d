#include "handlers/pubsub/session.hpp"

#include "http/limits.hpp"
#include "http/websocket/frame_writer.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace weft::handlers::pubsub {

namespace ws = http::websocket;

namespace {

// An empty ping, and an event stream's comment: the same bytes for every
// session, never freed.
constexpr std::string_view kPing("\x89\x00", 2);
constexpr std::string_view kComment(":\n\n");
constexpr std::size_t kMaxIov = 256;
// What a queued entry costs beside its bytes, counted against max_queued:
// the Entry and, for a control frame, its Piece and the heap's overhead.
constexpr std::size_t kEntryCost = 128;

} // namespace

struct Session::Assembly {
    explicit Assembly(std::uint64_t size)
        : storage(new std::uint8_t[size]), assembler({storage.get(), size}) {}
    std::unique_ptr<std::uint8_t[]> storage;
    ws::MessageAssembler assembler;
};

Session::Session(Kind kind, int fd, std::shared_ptr<TopicSpace> space, LoopHub& hub,
                 const SessionSettings& settings)
    : watch_{{&Session::on_ready}, this}, tick_{{}, this}, fd_(fd), kind_(kind),
      space_(std::move(space)), hub_(hub), settings_(settings) {
    tick_.timer.fire = &Session::on_timer;
    hub_.count_session(1);
}

Session::~Session() {
    tick_.timer.cancel();
    leave();
    if (serial_) hub_.remove(*this, serial_);
    drop_queue(false);
    hub_.forget(*this);
    hub_.count_session(-1);
}

bool Session::join(std::string_view name, std::uint64_t after) {
    std::vector<MessagePtr> history;
    topic_ = space_->subscribe(name, hub_, settings_.limits, after, history, seen_through_);
    if (!topic_) return false;
    serial_ = topic_->serial;
    hub_.add(*this, serial_);
    // The newest that fit in max_queued, oldest first.
    std::size_t first = history.size();
    std::uint64_t bytes = 0;
    while (first > 0) {
        const Message& message = *history[first - 1];
        bytes += kind_ == Kind::websocket ? message.websocket().size() : message.sse().size();
        if (bytes > settings_.max_queued) break;
        --first;
    }
    for (std::size_t i = first; i < history.size(); ++i) {
        auto* piece = new Piece{history[i], {}, 0};
        push(piece, kind_ == Kind::websocket ? piece->message->websocket() : piece->message->sse());
    }
    return true;
}

void Session::start(std::unique_ptr<http::SessionLog> log) {
    log_ = std::move(log);
    if (hub_.loop().watch_fd(fd_, watch_.watcher, kReadable | kWritable) == 0) return;
    // Not watched: the loop closes the fd, and nothing is ours.
    if (log_) log_->write(kind_ == Kind::websocket ? 101 : 200, 0, "not watched");
    delete this;
}

void Session::keep(std::unique_ptr<http::LimitHold> count) {
    limit_ = std::move(count);
}

void Session::on_ready(FdWatcher& watcher, std::uint8_t ready) {
    reinterpret_cast<Watch&>(watcher).session->ready(ready);
}

void Session::on_timer(Timer& timer) {
    reinterpret_cast<Tick&>(timer).session->tick();
}

void Session::ready(std::uint8_t ready) {
    if (!started_) {
        // The fd is ours from this call on (http/detached.hpp).
        started_ = true;
        if (state_ == State::closing && kind_ == Kind::sse) { // its queue filled meanwhile
            finish(0, note_);
            return;
        }
        if (hub_.loop().stopping()) {
            if (kind_ == Kind::sse) {
                finish(0, "sse server stopping");
                return;
            }
            stop(); // the close frame goes below, with what is queued
        } else if (state_ == State::open && settings_.ping_ms) {
            arm(settings_.ping_ms);
        }
        if (!received_.empty()) {
            std::string bytes = std::move(received_);
            received_ = {};
            if (!consume({reinterpret_cast<std::uint8_t*>(bytes.data()), bytes.size()})) return;
        }
        ready |= kReadable | kWritable;
    }
    if ((ready & (kReadable | kPeerClosed | kHungUp)) &&
        !read_input(ready & (kPeerClosed | kHungUp)))
        return;
    if ((ready & kWritable) && !queue_.empty()) flush();
}

bool Session::read_input(bool peer_closed) {
    std::uint8_t* scratch = hub_.scratch();
    for (;;) {
        const ssize_t n = ::recv(fd_, scratch, LoopHub::kScratch, MSG_DONTWAIT);
        if (n > 0) {
            if (!consume({scratch, static_cast<std::size_t>(n)})) return false;
            // A short read emptied the socket: bytes after it raise a new
            // edge. Its end does not when it came with this edge's bytes:
            // then read on to it.
            if (static_cast<std::size_t>(n) < LoopHub::kScratch && !peer_closed) return true;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        // The end of the stream, or an error: nothing more can be said.
        if (kind_ == Kind::sse)
            finish(0, state_ == State::open ? "sse closed by client" : note_);
        else
            finish(state_ == State::open ? 1006 : note_code_,
                   state_ == State::open ? "closed without a close frame" : note_);
        return false;
    }
}

bool Session::consume(std::span<std::uint8_t> bytes) {
    if (kind_ == Kind::sse) return true; // read only to see the client leave
    while (!bytes.empty()) {
        const ws::FrameReader::Step step = reader_.next(bytes);
        bytes = bytes.subspan(step.consumed);
        switch (step.event) {
        case ws::FrameReader::Event::need_more:
            return true;
        case ws::FrameReader::Event::fail:
            close_with(step.error, "protocol error", static_cast<std::uint16_t>(step.error),
                       step.error == ws::CloseCode::invalid_payload ? "invalid close reason"
                                                                    : "protocol error");
            return true; // the reader fails for good: the rest is dropped
        case ws::FrameReader::Event::control:
            heard_ = true;
            if (!on_control(step)) return false;
            break;
        case ws::FrameReader::Event::data:
            heard_ = true;
            if (!on_data(step)) return false;
            break;
        }
    }
    return true;
}

bool Session::on_control(const ws::FrameReader::Step& step) {
    switch (step.opcode) {
    case ws::Opcode::ping:
        if (state_ == State::open && !push_control(ws::Opcode::pong, step.payload))
            close_with(ws::CloseCode::policy_violation, "send queue full", 1008, "send queue full");
        send_soon();
        return true;
    case ws::Opcode::close: {
        if (peer_closed_) return true;
        peer_closed_ = true;
        if (state_ == State::closing) {
            // The answer to ours: done once ours is out.
            if (queue_.empty()) {
                finish(note_code_, note_);
                return false;
            }
            return true;
        }
        // Echo its code and reason (§5.5.1; the reader checked both), then
        // close once the echo is out.
        const std::uint16_t code =
            step.payload.size() >= 2
                ? static_cast<std::uint16_t>(step.payload[0] << 8 | step.payload[1])
                : static_cast<std::uint16_t>(ws::CloseCode::no_status);
        state_ = State::closing;
        note_code_ = code;
        note_ = "closed by client";
        leave();
        // What is queued goes first (a pong it asked for among it): bounded.
        push_control(ws::Opcode::close, step.payload);
        arm(kCloseWaitMs);
        send_soon();
        return true;
    }
    default: // a pong: heard_ is all it says
        return true;
    }
}

bool Session::on_data(const ws::FrameReader::Step& step) {
    if (state_ != State::open) return true;
    if (!settings_.clients_publish) {
        close_with(ws::CloseCode::policy_violation, "clients may not publish", 1008,
                   "clients may not publish");
        return true;
    }
    if (!assembly_) assembly_ = std::make_unique<Assembly>(settings_.max_message);
    switch (assembly_->assembler.add(step)) {
    case ws::MessageStatus::partial:
        return true;
    case ws::MessageStatus::fail: {
        const ws::CloseCode code = assembly_->assembler.error();
        assembly_.reset();
        close_with(code,
                   code == ws::CloseCode::message_too_big ? "message too big" : "invalid utf-8",
                   static_cast<std::uint16_t>(code),
                   code == ws::CloseCode::message_too_big ? "message too big" : "invalid utf-8");
        return true;
    }
    case ws::MessageStatus::complete:
        break;
    }
    std::shared_ptr<Message> message = Message::make(
        assembly_->assembler.message(), assembly_->assembler.opcode() == ws::Opcode::text);
    assembly_.reset();
    space_->publish(*topic_, message, settings_.limits, &hub_);
    return true;
}

void Session::deliver(Piece& piece) {
    if (state_ != State::open || piece.message->id() <= seen_through_) return;
    const std::string_view bytes =
        kind_ == Kind::websocket ? piece.message->websocket() : piece.message->sse();
    if (push(&piece, bytes)) {
        send_soon();
        return;
    }
    if (kind_ == Kind::sse) {
        // The hub walks its list with the next session in hand: this one may go.
        if (started_) {
            finish(0, "sse queue full");
            return;
        }
        // Not ours to close yet: its first on_ready ends it.
        state_ = State::closing;
        note_ = "sse queue full";
        leave();
        drop_queue(false);
        return;
    }
    close_with(ws::CloseCode::policy_violation, "send queue full", 1008, "send queue full");
}

bool Session::push(Piece* piece, std::string_view bytes, bool always) {
    // One message always fits an empty queue: an event stream's lines make
    // a message of max_message bytes longer than that.
    // Each entry is charged what it holds in memory beside its bytes, so
    // that a client sending empty pings and reading nothing (a 2-byte pong
    // each, in a Piece of its own) meets max_queued as a slow reader does:
    // counting bytes alone let one hold 45 times max_queued (review).
    const std::size_t cost = bytes.size() + kEntryCost;
    if (queued_bytes_ && queued_bytes_ + cost > settings_.max_queued && !always) return false;
    queue_.push_back({piece, bytes.data(), static_cast<std::uint32_t>(bytes.size())});
    queued_bytes_ += cost;
    if (piece) ++piece->users;
    return true;
}

bool Session::push_control(ws::Opcode opcode, std::span<const std::uint8_t> payload) {
    // The reader's control payloads are at most 125 bytes; said again so
    // the compiler sees the frame fits (g++ 12's LTO warned).
    payload = payload.first(std::min(payload.size(), ws::kMaxControlPayload));
    std::uint8_t frame[ws::kMaxControlFrame];
    const std::size_t size = ws::write_control_frame(frame, opcode, payload);
    auto* piece = new Piece{nullptr, std::string(reinterpret_cast<char*>(frame), size), 0};
    // A close frame always goes: it ends the queue.
    if (!push(piece, piece->own, opcode == ws::Opcode::close)) {
        delete piece;
        return false;
    }
    return true;
}

void Session::send_soon() {
    if (!dirty && !queue_.empty()) hub_.mark_dirty(*this);
}

void Session::flush() {
    if (!started_) return; // its first on_ready flushes
    while (!queue_.empty()) {
        iovec iov[kMaxIov];
        std::size_t count = 0;
        std::size_t total = 0;
        for (; count < queue_.size() && count < kMaxIov; ++count) {
            const Entry& entry = queue_[count];
            const std::size_t skip = count == 0 ? sent_ : 0;
            iov[count] = {const_cast<char*>(entry.data + skip), entry.size - skip};
            total += entry.size - skip;
        }
        msghdr message{};
        message.msg_iov = iov;
        message.msg_iovlen = count;
        const ssize_t n = ::sendmsg(fd_, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return; // a writable edge comes
            if (kind_ == Kind::sse)
                finish(0, state_ == State::open ? "sse closed by client" : note_);
            else
                finish(state_ == State::open ? 1006 : note_code_,
                       state_ == State::open ? "send failed" : note_);
            return;
        }
        bytes_sent_ += static_cast<std::uint64_t>(n);
        std::size_t left = static_cast<std::size_t>(n);
        std::size_t done = 0;
        while (done < queue_.size()) {
            Entry& entry = queue_[done];
            const std::size_t rest = entry.size - sent_;
            if (left < rest) {
                sent_ += static_cast<std::uint32_t>(left);
                break;
            }
            left -= rest;
            sent_ = 0;
            queued_bytes_ -= entry.size + kEntryCost;
            release(entry);
            ++done;
        }
        queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(done));
        if (static_cast<std::size_t>(n) < total) return; // full: a writable edge comes
    }
    // A burst's room goes back; a steady stream keeps its few entries.
    if (queue_.capacity() > 64) queue_.shrink_to_fit();
    if (state_ == State::closing) {
        if (peer_closed_ || kind_ == Kind::sse) {
            finish(note_code_, note_);
            return;
        }
        // Ours is out: the client has 2 s to answer it.
        arm(kCloseWaitMs);
    }
}

void Session::release(Entry& entry) {
    if (entry.piece && --entry.piece->users == 0) delete entry.piece;
}

void Session::drop_queue(bool keep_partial) {
    const std::size_t keep = keep_partial && sent_ > 0 && !queue_.empty() ? 1 : 0;
    for (std::size_t i = keep; i < queue_.size(); ++i) {
        queued_bytes_ -= queue_[i].size + kEntryCost;
        release(queue_[i]);
    }
    queue_.resize(keep);
    if (!keep) sent_ = 0;
}

void Session::leave() {
    // It stays in its hub's list until it goes (a stop finds it there), but
    // counts no more: nothing more is delivered to it.
    if (!topic_) return;
    space_->unsubscribe(*topic_, hub_);
    topic_ = nullptr;
}

void Session::end_now() {
    if (!started_) return; // the connection's still: its first on_ready ends it
    finish(note_code_ ? note_code_ : 1001, *note_ ? note_ : "server stopping");
}

void Session::close_with(ws::CloseCode code, std::string_view reason, std::uint16_t note_code,
                         const char* note) {
    if (state_ != State::open) return;
    state_ = State::closing;
    note_code_ = note_code;
    note_ = note;
    leave();
    assembly_.reset();
    drop_queue(true);
    if (kind_ == Kind::websocket) {
        std::uint8_t payload[ws::kMaxControlPayload];
        const std::size_t size = ws::write_close_payload(payload, code, reason);
        push_control(ws::Opcode::close, {payload, size});
    }
    arm(kCloseWaitMs);
    send_soon();
}

void Session::stop() {
    if (kind_ == Kind::websocket) {
        close_with(ws::CloseCode::going_away, "server stopping", 1001, "server stopping");
        return;
    }
    if (state_ != State::open) return;
    // An event stream ends: what is queued goes if the socket takes it now.
    state_ = State::closing;
    note_ = "sse server stopping";
    leave();
    arm(kCloseWaitMs);
    if (!started_) return;
    if (queue_.empty())
        finish(0, note_);
    else
        flush();
}

void Session::arm(std::uint32_t ms) {
    Loop& loop = hub_.loop();
    loop.timers().arm(tick_.timer, loop.now() + ms);
}

void Session::tick() {
    if (state_ == State::closing) {
        if (started_)
            finish(note_code_, note_);
        else
            arm(kCloseWaitMs);
        return;
    }
    if (kind_ == Kind::websocket) {
        missed_ = heard_ ? 0 : static_cast<std::uint8_t>(missed_ + 1);
        heard_ = false;
        if (missed_ >= 2) {
            close_with(ws::CloseCode::going_away, "ping timeout", 1001, "ping timeout");
            return;
        }
    }
    // A keep-alive that does not fit is dropped: the queue is busy anyway.
    push(nullptr, kind_ == Kind::websocket ? kPing : kComment);
    arm(settings_.ping_ms);
    send_soon();
}

void Session::finish(std::uint16_t note_code, const char* note) {
    if (log_) {
        char text[80];
        if (kind_ == Kind::websocket)
            std::snprintf(text, sizeof text, "ws %u %s", unsigned{note_code}, note);
        else
            std::snprintf(text, sizeof text, "%s", note);
        log_->write(kind_ == Kind::websocket ? 101 : 200, bytes_sent_, text);
    }
    hub_.loop().close_fd(fd_);
    delete this;
}

} // namespace weft::handlers::pubsub
