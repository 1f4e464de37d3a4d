#include "http/connection.hpp"

#include "http/exchange.hpp"
#include "http/path.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

namespace weft::http {

namespace {

constexpr std::int64_t kPark = yield_value(Op::want_read);
constexpr std::int64_t kClose = yield_value(Op::abort);

// A lingering close reads what the client still sends, for this long and
// this much at most, so our last response is not lost to a reset.
constexpr std::uint32_t kLingerMs = 2'000;
constexpr std::size_t kLingerBytes = 1 << 20;

// recv and sendmsg straight through syscall(): libc's wrappers are
// cancellation points, and switching asynchronous cancellation on and off
// around each call cost 60 instructions a request. weft never cancels
// threads.
ssize_t receive_bytes(int fd, void* into, std::size_t n) {
    return ::syscall(SYS_recvfrom, fd, into, n, 0, nullptr, nullptr);
}

ssize_t send_message(int fd, const msghdr* message, int flags) {
    return ::syscall(SYS_sendmsg, fd, message, flags);
}

// The part of a request head a connection received before it parked, kept
// with the parked fd rather than on a coroutine's stack: a block just its
// size, and the head's deadline.
struct PartialHead final : ParkedState {
    std::uint64_t deadline;
    std::uint32_t size;

    char* bytes() { return reinterpret_cast<char*>(this + 1); }

    // nullptr if out of memory, or for more than a buffer holds (the head
    // came from one, below the parser's limit: never, but it is checked
    // where the size is chosen).
    static PartialHead* save(const char* bytes, std::size_t size, std::uint64_t deadline) {
        if (size >= Connection::kBufferSize) return nullptr;
        void* memory = std::malloc(sizeof(PartialHead) + size);
        if (!memory) return nullptr;
        auto* head = new (memory) PartialHead;
        head->release = [](ParkedState* self) { std::free(static_cast<PartialHead*>(self)); };
        head->deadline = deadline;
        head->size = static_cast<std::uint32_t>(size);
        std::memcpy(head->bytes(), bytes, size);
        return head;
    }
};

} // namespace

std::int64_t serve_connection(int fd, const Server& server) {
    Connection connection(fd, server);
    return connection.run();
}

Connection::Connection(int fd, const Server& server)
    : fd_(fd), server_(server), options_(server.options), parser_(server.options.parser) {
    // No syscall: the loop has just looked at the fd's entry to start this
    // coroutine. An earlier coroutine of this connection parked it if it is
    // registered with epoll (the loop registers a connection only once it
    // waits or parks; a fresh one starts with a zeroed entry), and may have
    // left a head begun.
    Loop* loop = Loop::current();
    if (!loop) return;
    idle_ = loop->table()[fd].registered ? Idle::parked : Idle::fresh;
    if (ParkedState* parked = loop->take_parked(fd)) resume_head(parked);
}

// --- waiting ------------------------------------------------------------------

std::int64_t Connection::wait(std::uint8_t interest, std::uint32_t timeout_ms) {
    Loop& loop = *Loop::current();
    if (interest & kReadable) flush();
    loop.set_timeout(fd_, timeout_ms);
    const std::int64_t result = io::wait(fd_, interest);
    loop.clear_timeout(fd_);
    return result;
}

ssize_t Connection::receive(std::size_t at, std::uint32_t timeout_ms) {
    for (;;) {
        const ssize_t n = receive_bytes(fd_, buffer_ + at, kBufferSize - at);
        if (n >= 0) {
            drained_ = static_cast<std::size_t>(n) < kBufferSize - at;
            return n;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -errno;
        const std::int64_t woke = wait(kReadable, timeout_ms);
        if (woke < 0 && woke != kHangup) return woke;
    }
}

ssize_t Connection::receive_head() {
    for (;;) {
        // After a short read the socket was empty: what comes later raises a
        // new edge, so there is no need to hear EAGAIN first.
        if (!drained_) {
            const ssize_t n = receive_bytes(fd_, buffer_ + end_, kBufferSize - end_);
            if (n >= 0) {
                drained_ = static_cast<std::size_t>(n) < kBufferSize - end_;
                return n;
            }
            if (errno == EINTR) continue;
            if (errno != EAGAIN) return -errno;
        }
        Loop& loop = *Loop::current();
        if (!head_deadline_) head_deadline_ = loop.now() + options_.request_timeout_ms;
        if (loop.now() >= head_deadline_) return -ETIMEDOUT;
        if (!loop.stopping()) return -EAGAIN;
        // A stopping loop closes parked connections: a head begun before the
        // stop is waited for here, like any request in progress.
        flush();
        loop.set_timeout(fd_, static_cast<std::uint32_t>(head_deadline_ - loop.now()));
        const std::int64_t woke = io::wait(fd_, kReadable);
        loop.clear_timeout(fd_);
        if (woke < 0 && woke != kHangup) return woke;
        drained_ = false;
    }
}

std::int64_t Connection::park_head() {
    // Responses corked for this pipelined head go out before the wait.
    flush();
    Loop& loop = *Loop::current();
    auto* head = PartialHead::save(buffer_, end_, head_deadline_);
    if (!head) return kClose;
    loop.set_timeout(fd_, static_cast<std::uint32_t>(head_deadline_ - loop.now()));
    loop.leave_parked(fd_, head);
    return kPark;
}

std::int64_t Connection::park_again() {
    Loop& loop = *Loop::current();
    if (loop.stopping()) return unread_input() ? close_gracefully() : kClose;
    // unpark() cancelled the fd's timer, which keeps the deadline the
    // connection parked with; nothing in this coroutine armed it since.
    const std::uint64_t deadline = loop.table()[fd_].timer.deadline;
    if (loop.now() >= deadline) return kClose;
    loop.set_timeout(fd_, static_cast<std::uint32_t>(deadline - loop.now()));
    return kPark;
}

void Connection::resume_head(ParkedState* parked) {
    auto* head = static_cast<PartialHead*>(parked);
    // save() took it from a buffer like this one.
    assert(head->size < kBufferSize);
    end_ = std::min<std::size_t>(head->size, kBufferSize - 1);
    std::memcpy(buffer_, head->bytes(), end_);
    head_deadline_ = head->deadline;
    head->release(head);
}

void Connection::flush() {
    if (!corked_) return;
    corked_ = false;
    // Setting TCP_NODELAY pushes out what MSG_MORE held back.
    const int on = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

// --- the request loop ---------------------------------------------------------

std::int64_t Connection::run() {
    for (;;) {
        // The next request moves to the front of the buffer.
        if (pos_ == end_) {
            pos_ = end_ = 0;
        } else if (pos_ > 0) {
            std::memmove(buffer_, buffer_ + pos_, end_ - pos_);
            end_ -= pos_;
            pos_ = 0;
        }
        if (end_ == 0) {
            // Nothing of a next request is buffered. When the last read left
            // the socket empty, any byte that comes later raises a new edge,
            // so the connection parks at once, without trying a read that
            // would say EAGAIN: the stack goes back until bytes come.
            const ssize_t n = drained_ ? -1 : receive_bytes(fd_, buffer_, kBufferSize);
            if (n < 0 && (drained_ || errno == EAGAIN)) {
                Loop& loop = *Loop::current();
                // A request that came since the last read is not answered,
                // but must not turn the close into a reset either.
                if (loop.stopping()) return unread_input() ? close_gracefully() : kClose;
                loop.set_timeout(fd_, idle_ == Idle::fresh ? options_.request_timeout_ms
                                                           : options_.keep_alive_timeout_ms);
                return kPark;
            }
            if (n <= 0) return kClose;
            end_ = static_cast<std::size_t>(n);
            drained_ = static_cast<std::size_t>(n) < kBufferSize;
        }
        parser_.reset();
        ParseStatus status;
        bool idle = false;
        while ((status = parser_.parse({buffer_, end_}, request_)) == ParseStatus::incomplete) {
            if (end_ == kBufferSize) {
                status = ParseStatus::error; // the parser's limits are below the buffer's
                break;
            }
            if (drained_ && buffer_[0] == '\r') {
                // Empty lines before a request line are ignored (RFC 9112
                // §2.2). Alone they start no request: the connection idles,
                // not under the head's deadline, and they do not move the
                // deadline it idles under. Dropped only once the socket is
                // empty, so a flood of them still ends at max_head.
                const std::size_t start = past_empty_lines(0);
                if (start == end_) {
                    if (idle_ == Idle::parked) return park_again();
                    idle = true;
                    break;
                }
                if (start > 0) {
                    std::memmove(buffer_, buffer_ + start, end_ - start);
                    end_ -= start;
                    parser_.reset();
                    continue;
                }
            }
            const ssize_t n = receive_head();
            if (n == -EAGAIN) return park_head();
            if (n <= 0) {
                // A client that went quiet mid-head gets 408, one that left nothing.
                if (n == -ETIMEDOUT) answer_bad_request(408, "the request head took too long");
                return kClose;
            }
            end_ += static_cast<std::size_t>(n);
        }
        head_deadline_ = 0;
        if (idle) {
            pos_ = end_;
            continue;
        }
        Next next;
        if (status == ParseStatus::error) {
            next = answer_bad_request(parser_.error_status() ? parser_.error_status() : 431,
                                      parser_.error_reason());
        } else {
            next = handle(parser_.head_size());
        }
        idle_ = Idle::answered;
        if (next == Next::linger) return close_gracefully();
        if (next == Next::close) return kClose;
    }
}

Connection::Next Connection::handle(std::size_t head_size) {
    pos_ = body_base_ = head_size;
    body_left_ = request_.chunked ? 0 : request_.content_length;
    body_done_ = !request_.has_body();
    body_error_ = 0;
    continue_sent_ = false;
    if (request_.chunked) chunked_.reset();
    // Responses are corked while the client has pipelined more behind this
    // one; empty lines after it are no request.
    if (!request_.has_body()) pos_ = past_empty_lines(pos_);
    pipelined_ = !request_.has_body() && end_ > pos_;

    std::string_view path = request_.path;
    const Handler* handler = nullptr;
    int refused = 0;
    // Any method (a token: the parser saw to that) goes to the handler:
    // WebDAV's and CalDAV's (PROPFIND, MKCOL, REPORT, ...) are for the
    // application; a static handler answers 405 with Allow.
    if (request_.content_length > options_.max_request_body) {
        refused = 413;
    } else if (path == "*") {
        refused = -1; // OPTIONS *: answered here
    } else if (path.size() > sizeof path_) {
        refused = 414;
    } else if (auto normal = normalize_path(path, path_)) {
        path = *normal;
        handler = server_.router.route(request_.host, path);
        if (!handler) refused = 404;
    } else {
        refused = 400;
    }

    Exchange exchange(*this, request_, path);
    if (refused == -1) {
        exchange.status(204);
        exchange.header("Allow", "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH");
        exchange.send({});
    } else if (refused) {
        // A body we will not read (413) would be taken for the next request.
        if (refused == 413) exchange.close_after();
        exchange.send_error(refused);
    } else {
        handler->serve(exchange);
        if (!exchange.responded() && !exchange.abandoned()) {
            const int status = body_error_ == -EFBIG       ? 413
                               : body_error_ == -ETIMEDOUT ? 408
                               : body_error_ == -EPROTO    ? 400
                                                           : 500;
            exchange.send_error(status);
        }
    }
    Next next = finish_body(exchange);
    if (!exchange.finished()) next = Next::close; // a body cut short: only closing tells
    if (server_.access_log) log(exchange);
    if (next == Next::keep_alive &&
        (!request_.keep_alive || exchange.closing() || Loop::current()->stopping())) {
        // Bytes the client sent after a request we end on must not reset the
        // connection before it reads the answer.
        next = !body_done_ || unread_input() ? Next::linger : Next::close;
    }
    return next;
}

Connection::Next Connection::answer_bad_request(int status, std::string_view reason) {
    // The head did not parse: what follows cannot be trusted to start a request.
    Request& r = request_;
    r = Request{};
    r.minor = 1;
    r.keep_alive = false;
    body_done_ = true;
    Exchange exchange(*this, request_, {});
    exchange.close_after();
    exchange.send_error(status, reason);
    if (server_.access_log) log(exchange);
    return Next::linger;
}

// What the handler left of the body is read and dropped, so the next request
// starts where this one's body ends, never inside it.
Connection::Next Connection::finish_body(Exchange& exchange) {
    if (body_done_) return Next::keep_alive;
    if (body_error_) return Next::linger;
    if (awaits_continue()) return Next::linger; // the answer said Connection: close
    if (exchange.closing()) return Next::linger;
    char sink[2048];
    for (;;) {
        const ssize_t n = read_body(sink, sizeof sink, true);
        if (n == 0) return Next::keep_alive;
        if (n < 0) return Next::linger;
    }
}

std::size_t Connection::past_empty_lines(std::size_t at) const {
    while (end_ - at >= 2 && buffer_[at] == '\r' && buffer_[at + 1] == '\n') at += 2;
    return at;
}

bool Connection::unread_input() const {
    if (end_ > pos_) return true;
    int queued = 0;
    return ::ioctl(fd_, FIONREAD, &queued) == 0 && queued > 0;
}

std::int64_t Connection::close_gracefully() {
    // Half-close, then read until the client closes too (or a limit), so our
    // answer is not destroyed by a reset for data it is still sending.
    flush();
    ::shutdown(fd_, SHUT_WR);
    std::size_t drained = 0;
    Loop& loop = *Loop::current();
    loop.set_timeout(fd_, kLingerMs);
    char sink[2048];
    while (drained < kLingerBytes) {
        const ssize_t n = io::read(fd_, sink, sizeof sink);
        if (n <= 0) break;
        drained += static_cast<std::size_t>(n);
    }
    return kClose;
}

// --- sending ------------------------------------------------------------------

int Connection::send(iovec* iov, int count, bool more) {
    more = more || pipelined_;
    const int flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0);
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<std::size_t>(count);
    for (;;) {
        const ssize_t n = send_message(fd_, &message, flags);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) return -errno;
            const std::int64_t woke = wait(kWritable, options_.send_timeout_ms);
            if (woke < 0 && woke != kHangup) return static_cast<int>(woke);
            continue;
        }
        std::size_t sent = static_cast<std::size_t>(n);
        while (message.msg_iovlen && sent >= message.msg_iov->iov_len) {
            sent -= message.msg_iov->iov_len;
            ++message.msg_iov;
            --message.msg_iovlen;
        }
        if (message.msg_iovlen == 0) break;
        message.msg_iov->iov_base = static_cast<char*>(message.msg_iov->iov_base) + sent;
        message.msg_iov->iov_len -= sent;
    }
    corked_ = more;
    return 0;
}

ssize_t Connection::send_now(const iovec* iov, int count) {
    const int flags = MSG_NOSIGNAL | (pipelined_ ? MSG_MORE : 0);
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(iov);
    message.msg_iovlen = static_cast<std::size_t>(count);
    for (;;) {
        const ssize_t n = send_message(fd_, &message, flags);
        if (n >= 0) {
            corked_ = pipelined_;
            return n;
        }
        if (errno == EINTR) continue;
        return errno == EAGAIN ? 0 : -errno;
    }
}

int Connection::send_file(int file, off_t offset, std::uint64_t length) {
    while (length) {
        const std::size_t chunk = std::min<std::uint64_t>(length, 1u << 30);
        const ssize_t n = ::sendfile(fd_, file, &offset, chunk);
        if (n > 0) {
            length -= static_cast<std::uint64_t>(n);
            continue;
        }
        if (n == 0) return -EIO; // the file shrank under us
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -errno;
        const std::int64_t woke = wait(kWritable, options_.send_timeout_ms);
        if (woke < 0 && woke != kHangup) return static_cast<int>(woke);
    }
    corked_ = false;
    return 0;
}

// --- the request body ---------------------------------------------------------

ssize_t Connection::read_body(void* out, std::size_t n, bool head_sent) {
    if (body_error_) return body_error_;
    if (body_done_ || n == 0) return 0;
    if (request_.expect_continue && !continue_sent_ && !head_sent && request_.minor == 1 &&
        pos_ == end_) {
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        iovec iov{const_cast<char*>(kContinue), sizeof kContinue - 1};
        const int sent = send(&iov, 1);
        if (sent < 0) return body_error_ = sent;
    }
    continue_sent_ = true;
    char* const into = static_cast<char*>(out);
    if (!request_.chunked) {
        const std::size_t want = std::min<std::uint64_t>(n, body_left_);
        ssize_t got;
        if (pos_ < end_) {
            got = static_cast<ssize_t>(std::min(want, end_ - pos_));
            std::memcpy(into, buffer_ + pos_, static_cast<std::size_t>(got));
            pos_ += static_cast<std::size_t>(got);
        } else {
            // Straight into the caller's buffer, never past the body's end.
            for (;;) {
                got = receive_bytes(fd_, into, want);
                // A read that filled `want` may have left bytes of the next
                // request in the socket, with no edge to come for them.
                if (got >= 0) drained_ = static_cast<std::size_t>(got) < want;
                if (got >= 0 || errno != EAGAIN) break;
                const std::int64_t woke = wait(kReadable, options_.body_timeout_ms);
                if (woke < 0 && woke != kHangup) return body_error_ = static_cast<int>(woke);
            }
            if (got < 0) return body_error_ = -errno;
            if (got == 0) return body_error_ = -ECONNRESET; // the body was cut short
        }
        body_left_ -= static_cast<std::uint64_t>(got);
        body_done_ = body_left_ == 0;
        return got;
    }
    for (;;) {
        if (pos_ == end_) {
            pos_ = end_ = body_base_;
            const ssize_t got = receive(end_, options_.body_timeout_ms);
            if (got < 0) return body_error_ = static_cast<int>(got);
            if (got == 0) return body_error_ = -ECONNRESET;
            end_ += static_cast<std::size_t>(got);
        }
        const std::size_t available = std::min(end_ - pos_, n);
        const ChunkedDecoder::Step step = chunked_.next({buffer_ + pos_, available});
        pos_ += step.consumed;
        switch (step.status) {
        case ChunkedDecoder::Status::data:
            if (chunked_.decoded() > options_.max_request_body) return body_error_ = -EFBIG;
            std::memcpy(into, step.data.data(), step.data.size());
            if (step.data.empty()) continue;
            return static_cast<ssize_t>(step.data.size());
        case ChunkedDecoder::Status::incomplete:
            continue;
        case ChunkedDecoder::Status::done:
            body_done_ = true;
            pos_ = past_empty_lines(pos_);
            pipelined_ = end_ > pos_;
            return 0;
        case ChunkedDecoder::Status::error:
            return body_error_ = -EPROTO;
        }
    }
}

// --- the access log -----------------------------------------------------------

std::string_view Connection::received_line() const {
    // The head starts the buffer; the parser skips empty lines before it.
    const std::size_t start = past_empty_lines(0);
    const std::size_t limit = std::min(end_, start + kLoggedLineMax);
    std::size_t stop = start;
    while (stop < limit && buffer_[stop] != '\r' && buffer_[stop] != '\n') ++stop;
    return {buffer_ + start, stop - start};
}

void Connection::log(const Exchange& exchange) {
    if (!remote_[0]) {
        // Once per coroutine, not per request: the peer does not change.
        std::memcpy(remote_, "-", 2);
        sockaddr_storage address{};
        socklen_t length = sizeof address;
        if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
            if (address.ss_family == AF_INET)
                inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&address)->sin_addr, remote_,
                          sizeof remote_);
            else if (address.ss_family == AF_INET6)
                inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr, remote_,
                          sizeof remote_);
            else
                std::memcpy(remote_, "unix:", 6);
        }
    }
    std::string_view line;
    if (!request_.method_name.empty()) {
        const char* start = request_.method_name.data();
        const char* end = static_cast<const char*>(
            std::memchr(start, '\r', static_cast<std::size_t>(buffer_ + end_ - start)));
        if (end) line = {start, static_cast<std::size_t>(end - start)};
    } else {
        line = received_line();
    }
    server_.access_log->write({remote_, line, exchange.status(), exchange.body_bytes_sent(),
                               request_.header("Referer"), request_.header("User-Agent")});
}

} // namespace weft::http
