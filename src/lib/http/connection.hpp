#pragma once
// A client connection, served in its own coroutine: read a head, route it,
// let the handler answer through an Exchange, deal with whatever body the
// handler left unread, and go round again while the connection is kept
// alive.
//
// The Connection lives on the coroutine's stack with its buffer. It returns
// to the loop (Op::want_read, which parks the fd without a coroutine) when
// its buffer holds no byte of a next request, or when a head is incomplete
// and nothing more is there to read: then the bytes received so far go with
// the parked fd (a PartialHead, a block their size) and the next coroutine
// starts from them. So a slow client holds no stack: the stack-clash probes
// of this frame make every page of it resident (measured: 41 KiB per
// connection holding half a head).
//
// The buffer: [0, pos_) is the current request (its head, and body bytes
// consumed), [pos_, end_) received and not yet consumed: the rest of the body,
// then pipelined requests. A request's Request views point into its head, so
// the head stays where it is until the request is done; body bytes are read
// in after it.

#include "http/chunked.hpp"
#include "http/request.hpp"
#include "http/server.hpp"

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft {
struct ParkedState;
}

namespace weft::http {

class Exchange;

// The loop's handler for a server's connections: the final Op for the loop.
std::int64_t serve_connection(int fd, const Server& server);

class Connection {
public:
    // Head limit plus room for body bytes behind the largest head.
    static constexpr std::size_t kBufferSize = 20 * 1024;

    Connection(int fd, const Server& server);
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    std::int64_t run();

    // --- for the Exchange ---
    // Sends every byte of the vector (consumed as it goes); 0 or -errno.
    // Corked (MSG_MORE) when `more` follows at once, and while pipelined
    // requests wait to be answered.
    int send(iovec* iov, int count, bool more = false);
    // What the socket takes of the vector now, without waiting: the bytes
    // sent (0: it is full), or -errno. Corked as send() is.
    ssize_t send_now(const iovec* iov, int count);
    // Sends `length` bytes of `file` from `offset`; 0 or -errno (-EIO when
    // the file ended early).
    int send_file(int file, off_t offset, std::uint64_t length);
    // The request body, de-chunked: bytes, 0 at its end, or -errno (-EFBIG
    // past max_request_body, -EPROTO when malformed, -ETIMEDOUT). The first
    // read sends the 100 Continue a client waits for, unless `head_sent`: a
    // response already begun would have it land inside its head or body.
    ssize_t read_body(void* buffer, std::size_t n, bool head_sent);
    // Pushes out corked responses: before waiting on anything but this
    // connection's own reads and writes.
    void flush();

    // The client waits for 100 Continue before sending the body it announced,
    // and none was sent: a final answer now means the connection closes
    // after it (the body may never come).
    bool awaits_continue() const {
        return !body_done_ && request_.expect_continue && !continue_sent_ && pos_ == end_;
    }

    int fd() const { return fd_; }
    const Server& server() const { return server_; }

private:
    enum class Next : std::uint8_t { keep_alive, close, linger };

    // Reads more of a head into the buffer: bytes, 0 at end of stream,
    // -EAGAIN when none are there (the connection parks with the head), or
    // -errno (-ETIMEDOUT past the head's deadline). Waits only while the
    // loop stops (it would close a parked connection).
    ssize_t receive_head();
    // Reads more into the buffer at `at`: bytes, 0 at end of stream, or
    // -errno. Waits up to `timeout_ms` if none are there.
    ssize_t receive(std::size_t at, std::uint32_t timeout_ms);
    // Parks with the head received so far, or answers 408 if its time is up.
    std::int64_t park_head();
    // Parks again, with nothing of a request, under the deadline an earlier
    // coroutine parked the connection with (Idle::parked); closes past it.
    std::int64_t park_again();
    // Takes back what an earlier coroutine of this connection parked with.
    void resume_head(ParkedState* parked);
    // Waits for `interest` on the connection, at most `timeout_ms`.
    std::int64_t wait(std::uint8_t interest, std::uint32_t timeout_ms);
    Next handle(std::size_t head_size);
    // Where the empty lines (CRLFs) buffered from `at` end.
    std::size_t past_empty_lines(std::size_t at) const;
    Next answer_bad_request(int status, std::string_view reason);
    Next finish_body(Exchange& exchange);
    void log(const Exchange& exchange);
    // For the log of a head that did not parse: its first line as received,
    // cut at kLoggedLineMax bytes (a stray TLS hello has no line end at all).
    std::string_view received_line() const;
    static constexpr std::size_t kLoggedLineMax = 512;
    // Whether bytes the client sent are unread: buffered, or still in the
    // socket (one syscall: asked only on the way to a close, where unread
    // bytes would turn it into a reset that can destroy the last answer).
    bool unread_input() const;
    std::int64_t close_gracefully();

    const int fd_;
    const Server& server_;
    const ServerOptions& options_;
    RequestParser parser_;
    Request request_;
    std::size_t pos_ = 0;
    std::size_t end_ = 0;
    std::size_t body_base_ = 0; // where body bytes are read in: after the head
    bool corked_ = false;       // a response went out with MSG_MORE
    bool pipelined_ = false;    // bytes of a next request are waiting
    // The current head's deadline on the loop's clock, from its first wait
    // for bytes (0: none yet): one for the whole head, however slowly it
    // trickles in, and kept across parks.
    std::uint64_t head_deadline_ = 0;
    // How the connection idles when it parks with nothing of a request:
    // fresh (it never parked nor answered) under request_timeout, answered
    // (by this coroutine) under keep_alive_timeout. Parked (by an earlier
    // coroutine, and this one answered nothing): under keep_alive_timeout
    // when woken for bytes an earlier one read, but after empty lines that
    // came alone under the deadline it parked with, so that a client sending
    // a CRLF a second cannot hold it open forever (each park starts a new
    // coroutine).
    enum class Idle : std::uint8_t { fresh, parked, answered };
    Idle idle_ = Idle::fresh;
    // The last read returned less than it asked for: the socket was empty
    // then, so whatever arrives later raises a fresh readiness edge.
    bool drained_ = false;
    // The current request's body.
    std::uint64_t body_left_ = 0; // Content-Length bytes not yet read
    bool body_done_ = true;
    bool continue_sent_ = false; // or no longer to be sent: the body was asked for
    int body_error_ = 0;
    ChunkedDecoder chunked_;
    char remote_[48] = ""; // the peer's address for the access log, once looked up
    char path_[8192];      // the decoded path: never longer than the request line
    char buffer_[kBufferSize];
};

} // namespace weft::http
