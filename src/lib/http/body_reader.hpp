#pragma once
// A request's body as its handler reads it: Content-Length bodies straight
// into the handler's buffer (never past the body's end), chunked ones through
// the ChunkedDecoder in the buffer behind the head, max_request_body enforced
// on what a chunked body grows to, and the 100 Continue a client waits for
// sent at the first read. What the handler leaves unread is read and dropped
// (finish()), so the next request starts exactly where the body ends: there
// is one position, the buffer's pos.
//
// The first error sticks: every later read returns it.

#include "http/chunked.hpp"
#include "http/client_socket.hpp"
#include "http/receive_buffer.hpp"
#include "http/request.hpp"
#include "http/server.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <string_view>

namespace weft::http {

class BodyReader {
public:
    BodyReader(ClientSocket& socket, ReceiveBuffer& in, const ServerOptions& options)
        : socket_(socket), in_(in), options_(options) {}
    BodyReader(const BodyReader&) = delete;
    BodyReader& operator=(const BodyReader&) = delete;

    // The body of `request`, whose head is the buffer's first `head_size`
    // bytes. Without a body, the empty lines after the head are skipped and
    // the socket corks while a next request is buffered.
    void start(const Request& request, std::size_t head_size) {
        request_ = &request;
        in_.pos = base_ = head_size;
        left_ = request.chunked ? 0 : request.content_length;
        done_ = !request.has_body();
        error_ = 0;
        continue_sent_ = false;
        if (request.chunked) new (&chunked_) ChunkedDecoder;
        if (done_) {
            ended();
        } else {
            socket_.set_pipelined(false);
        }
    }
    // No body will be read: the head did not parse.
    void none() {
        done_ = true;
        error_ = 0;
    }

    // Some bytes, 0 at its end, or -errno (-EFBIG past max_request_body,
    // -EPROTO when malformed, -ECONNRESET when cut short, -ETIMEDOUT past
    // body_timeout). The first read sends 100 Continue when the client asked
    // for it, unless `head_sent`: a response already begun would have it land
    // inside its head or body.
    ssize_t read(void* into, std::size_t n, bool head_sent);
    // Reads what is left of the body and drops it: true when the next
    // request can follow; false when only a (lingering) close can end this
    // one: the body failed, the client still waits for 100 Continue, or the
    // response is `closing` anyway.
    bool finish(bool closing);

    bool done() const { return done_; }
    int error() const { return error_; }
    // The client waits for 100 Continue before sending the body it announced,
    // and none was sent: a final answer now means the connection closes after
    // it (the body may never come).
    bool awaits_continue() const {
        return !done_ && request_->expect_continue && !continue_sent_ && in_.pos == in_.end;
    }
    // Whether bytes of a next request wait in the buffer behind this one's
    // (behind its body, when its length says where that ends): the client
    // sent it before anything now in the socket, its end of stream included.
    bool next_request_buffered() const {
        std::size_t next = in_.pos;
        if (!done_) {
            if (request_->chunked || in_.end - in_.pos <= left_) return false;
            next += static_cast<std::size_t>(left_);
        }
        return in_.past_empty_lines(next) < in_.end;
    }
    // Bytes received past the request, now the caller's (a protocol switch):
    // nothing else will read them. From where the request ended: the empty
    // lines ended() stepped over are no request, but they are bytes of the
    // new protocol.
    std::string_view take_unread() {
        const std::size_t from = !request_->has_body() ? base_
                                 : request_->chunked   ? chunked_end_
                                                       : in_.pos;
        in_.pos = in_.end;
        return {in_.bytes + from, in_.end - from};
    }

private:
    ssize_t read_chunked(char* into, std::size_t n);
    // Empty lines after a request are no request; the socket corks while a
    // next one is buffered.
    void ended() {
        in_.pos = in_.past_empty_lines(in_.pos);
        socket_.set_pipelined(in_.end > in_.pos);
    }

    ClientSocket& socket_;
    ReceiveBuffer& in_;
    const ServerOptions& options_;
    // Set by start() (and what is read of them by none()), not here: a
    // Connection, and its BodyReader, is made for each request of a
    // keep-alive client (a parked connection has no coroutine), so each
    // store here is one more per request. The decoder is constructed only
    // for a chunked body.
    const Request* request_;
    std::size_t base_;        // where body bytes are read in: after the head
    std::size_t chunked_end_; // where a chunked body ended, before any empty lines
    std::uint64_t left_;      // Content-Length bytes not yet read
    bool done_ = true;
    bool continue_sent_; // or no longer to be sent: the body was asked for
    int error_;
    union {
        ChunkedDecoder chunked_;
    };
};

} // namespace weft::http
