#include "http/connection.hpp"

#include "http/detached.hpp"
#include "http/exchange.hpp"
#include "http/path.hpp"
#include "http/proxy_header.hpp"
#include "http/session_log.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>

namespace weft::http {

namespace {

constexpr std::int64_t kPark = yield_value(Op::want_read);
constexpr std::int64_t kClose = yield_value(Op::abort);
constexpr std::int64_t kDetach = yield_value(Op::detach);

// A lingering close reads what the client still sends, for this long and
// this much at most, so our last response is not lost to a reset.
constexpr std::uint32_t kLingerMs = 2'000;
constexpr std::size_t kLingerBytes = 1 << 20;

// Where the access log writes its line: the loop's counters of requests
// (loop_stats.hpp; a few instructions, no shared write).
void count(LoopCounters& counters, const Exchange& exchange) {
    counters.count_request(exchange.status(), exchange.body_bytes_sent());
}

// Where a Connection made outside a loop (a fuzzer's) counts.
LoopCounters no_loop_counters;

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
        if (size >= ReceiveBuffer::kSize) return nullptr;
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

// What the server does with a request before any handler: the handler's
// verdict, or one the server answers itself.
struct Admission {
    enum class Verdict : std::uint8_t {
        serve,   // by `handler`
        options, // OPTIONS *: answered by the server
        refuse,  // with `status`
    };
    Verdict verdict;
    std::uint16_t status;
    const Handler* handler;
    std::string_view path; // normalised, once it could be
};

// Any method (a token: the parser saw to that) goes to the handler:
// WebDAV's and CalDAV's (PROPFIND, MKCOL, REPORT, ...) are for the
// application; a static handler answers 405 with Allow. The path is
// normalised into `scratch`, of `size` bytes.
Admission admit(const Request& request, const ServerOptions& options, const Router& router,
                char* scratch, std::size_t size) {
    using Verdict = Admission::Verdict;
    const std::string_view raw = request.path;
    if (request.content_length > options.max_request_body) return {Verdict::refuse, 413, {}, raw};
    if (raw.size() == 1 && raw.front() == '*') return {Verdict::options, 0, {}, raw};
    if (raw.size() > size) return {Verdict::refuse, 414, {}, raw};
    // The parser tells most paths normal on its way: no second look.
    const std::optional<std::string_view> path =
        request.path_normal ? std::optional(raw) : normalize_path(raw, scratch);
    if (!path) return {Verdict::refuse, 400, {}, raw};
    const Handler* handler = router.route(request.host, *path);
    if (!handler) return {Verdict::refuse, 404, {}, *path};
    return {Verdict::serve, 0, handler, *path};
}

} // namespace

std::int64_t serve_connection(int fd, const Server& server, const bool* replaced, bool proxied) {
    static constexpr bool kNever = false;
    Connection connection(fd, server, replaced ? replaced : &kNever, proxied);
    return connection.run();
}

Connection::Connection(int fd, const Server& server, const bool* replaced, bool proxied)
    : server_(server), options_(server.options), replaced_(replaced),
      socket_(fd, server.options.send_timeout_ms), body_(socket_, in_, server.options),
      parser_(server.options.parser),
      tcp_peer_state_(proxied ? TcpPeer::unwritten : TcpPeer::is_peer) {
    // No syscall: the loop has just looked at the fd's entry to start this
    // coroutine. An earlier coroutine of this connection parked it if it is
    // registered with epoll (the loop registers a connection only once it
    // waits or parks; a fresh one starts with a zeroed entry), or, on a
    // ring, if it parked with a receive (then it may have no poll), and may
    // have left a head begun.
    Loop* loop = Loop::current();
    counters_ = loop ? &loop->counters() : &no_loop_counters;
    if (!loop) return;
    const Ring* ring = loop->byte_ring();
    idle_ = loop->table()[fd].registered || (ring && ring->parked_before(fd)) ? Idle::parked
                                                                              : Idle::fresh;
    // A fresh coroutine of a proxied connection reads the header before it
    // waits or parks (take_proxy_header), so a later one finds it gone.
    awaiting_proxy_header_ = proxied && idle_ == Idle::fresh;
    if (ParkedState* parked = loop->take_parked(fd)) resume_head(parked);
}

// --- waiting ------------------------------------------------------------------

ssize_t Connection::receive_head() {
    // After a short read the socket was empty: what comes later raises a new
    // edge, so there is no need to hear EAGAIN first.
    bool try_read = !socket_.drained();
    for (;;) {
        if (try_read) {
            const ssize_t n = socket_.receive_now(in_.bytes + in_.end, kBufferSize - in_.end);
            if (n != -EAGAIN) return n;
        }
        Loop& loop = *Loop::current();
        if (!head_deadline_) head_deadline_ = loop.now() + options_.request_timeout_ms;
        if (loop.now() >= head_deadline_) return -ETIMEDOUT;
        if (!loop.stopping()) return -EAGAIN;
        // A stopping loop closes parked connections: a head begun before the
        // stop is waited for here, like any request in progress.
        const std::int64_t woke =
            socket_.wait(kReadable, static_cast<std::uint32_t>(head_deadline_ - loop.now()));
        if (woke < 0 && woke != kHangup) return woke;
        try_read = true;
    }
}

std::int64_t Connection::park_head() {
    // Responses corked for this pipelined head go out before the wait.
    socket_.flush();
    Loop& loop = *Loop::current();
    auto* head = PartialHead::save(in_.bytes, in_.end, head_deadline_);
    if (!head) return kClose;
    loop.set_timeout(socket_.fd(), static_cast<std::uint32_t>(head_deadline_ - loop.now()));
    loop.leave_parked(socket_.fd(), head);
    return kPark;
}

ssize_t Connection::receive_warm() {
    Loop& loop = *Loop::current();
    idle_deadline_ = loop.now() + options_.keep_alive_timeout_ms;
    if (!loop.begin_warm()) return -EAGAIN;
    ssize_t n = -EAGAIN;
    while (n == -EAGAIN) {
        if (loop.now() >= idle_deadline_) {
            n = -ETIMEDOUT;
            break;
        }
        const std::int64_t woke =
            socket_.wait(kReadable, static_cast<std::uint32_t>(idle_deadline_ - loop.now()));
        if (woke == Loop::kCooled) break; // parks, under the same deadline
        if (woke < 0 && woke != kHangup) {
            n = woke;
            break;
        }
        n = socket_.receive_now(in_.bytes, kBufferSize);
    }
    loop.end_warm();
    return n;
}

std::int64_t Connection::park_idle() {
    const std::uint64_t now = Loop::current()->now();
    if (idle_ == Idle::fresh) return park_until(now + options_.request_timeout_ms);
    return park_until(idle_deadline_ ? idle_deadline_ : now + options_.keep_alive_timeout_ms);
}

std::int64_t Connection::park_again() {
    // The fd's timer keeps the deadline the connection parked with (unpark()
    // left it, off); nothing in this coroutine armed it since.
    return park_until(Loop::current()->table()[socket_.fd()].timer.deadline);
}

std::int64_t Connection::park_until(std::uint64_t deadline) {
    Loop& loop = *Loop::current();
    // A request that came since the last read is not answered, but must not
    // turn the close into a reset either.
    if (loop.stopping()) return unread_input() ? close_gracefully() : kClose;
    if (loop.now() >= deadline) return kClose;
    loop.set_timeout(socket_.fd(), static_cast<std::uint32_t>(deadline - loop.now()));
    return kPark;
}

std::int64_t Connection::move_to_new_server() {
    // A reload replaced the server on this loop, and a next request is
    // here: its bytes go with the parked connection to a coroutine started
    // at once, which takes the new server. (One that parks idle takes it
    // when its bytes come.)
    Loop& loop = *Loop::current();
    if (idle_deadline_ && socket_.drained() && in_.past_empty_lines(0) == in_.end) {
        // Empty lines alone, come to a warm wait, start no request: dropped,
        // and the connection parks idle under its deadline, as it would
        // have parked (park_again); the new server takes its next bytes.
        in_.pos = in_.end = 0;
        return park_idle();
    }
    if (!head_deadline_) head_deadline_ = loop.now() + options_.request_timeout_ms;
    const std::int64_t op = park_head();
    if (op == kPark) loop.restart_soon(socket_.fd());
    return op;
}

void Connection::resume_head(ParkedState* parked) {
    auto* head = static_cast<PartialHead*>(parked);
    // save() took it from a buffer like this one.
    assert(head->size < kBufferSize);
    in_.end = std::min<std::size_t>(head->size, kBufferSize - 1);
    std::memcpy(in_.bytes, head->bytes(), in_.end);
    head_deadline_ = head->deadline;
    head->release(head);
}

bool Connection::take_proxy_header() {
    Loop& loop = *Loop::current();
    const std::uint64_t deadline = loop.now() + options_.request_timeout_ms;
    for (;;) {
        // Both versions' limits are below the buffer's: the parser decides
        // before it fills.
        const ssize_t n = socket_.receive_now(in_.bytes + in_.end, kBufferSize - in_.end);
        if (n == 0 || (n < 0 && n != -EAGAIN)) return false;
        if (n > 0) in_.end += static_cast<std::size_t>(n);
        const ProxyHeader header = parse_proxy_header({in_.bytes, in_.end});
        if (header.status == ProxyHeader::Status::invalid) return false;
        if (header.status == ProxyHeader::Status::done) {
            io::set_client(socket_.fd(), reinterpret_cast<const sockaddr*>(&header.client),
                           header.has_client ? header.client_length : 0, header.tls);
            in_.pos = header.consumed;
            return true;
        }
        if (n > 0 && !socket_.drained()) continue; // else an edge comes with more
        if (loop.now() >= deadline) return false;
        const std::int64_t woke =
            socket_.wait(kReadable, static_cast<std::uint32_t>(deadline - loop.now()));
        if (woke < 0 && woke != kHangup) return false;
    }
}

// --- the request loop ---------------------------------------------------------

std::int64_t Connection::run() {
    if (awaiting_proxy_header_ && !take_proxy_header()) return kClose;
    for (;;) {
        // Bytes left behind a request this coroutine answered are the next
        // one's, sent before that answer.
        request_.pipelined = idle_ == Idle::answered && in_.pos < in_.end;
        // The next request moves to the front of the buffer.
        if (in_.pos == in_.end) {
            in_.pos = in_.end = 0;
        } else if (in_.pos > 0) {
            std::memmove(in_.bytes, in_.bytes + in_.pos, in_.end - in_.pos);
            in_.end -= in_.pos;
            in_.pos = 0;
        }
        if (in_.end == 0) {
            // Nothing of a next request is buffered. When the last read left
            // the socket empty, any byte that comes later raises a new edge,
            // so the connection waits at once, without trying a read that
            // would say EAGAIN: warm, after an answer, while the loop lets
            // it; else it parks, and the stack goes back until bytes come.
            ssize_t n = socket_.drained() ? -EAGAIN : socket_.receive_now(in_.bytes, kBufferSize);
            // Warm once per answer: empty lines alone (idle_deadline_ set)
            // do not earn a connection another warm wait.
            if (n == -EAGAIN && idle_ == Idle::answered && !idle_deadline_) n = receive_warm();
            if (n == -EAGAIN) return park_idle();
            if (n <= 0) return kClose;
            in_.end = static_cast<std::size_t>(n);
        }
        // A full buffer cannot park (a parked head holds less than one): the
        // old server answers its first request, and the rest moves.
        if (*replaced_ && in_.end < kBufferSize) return move_to_new_server();
        parser_.reset();
        ParseStatus status;
        bool idle = false;
        while ((status = parser_.parse({in_.bytes, in_.end}, request_)) ==
               ParseStatus::incomplete) {
            if (in_.end == kBufferSize) {
                status = ParseStatus::error; // the parser's limits are below the buffer's
                break;
            }
            if (socket_.drained() && in_.bytes[0] == '\r') {
                // Empty lines before a request line are ignored (RFC 9112
                // §2.2). Alone they start no request: the connection idles,
                // not under the head's deadline, and they do not move the
                // deadline it idles under. Dropped only once the socket is
                // empty, so a flood of them still ends at max_head.
                const std::size_t start = in_.past_empty_lines(0);
                if (start == in_.end) {
                    if (idle_ == Idle::parked) return park_again();
                    idle = true;
                    break;
                }
                if (start > 0) {
                    std::memmove(in_.bytes, in_.bytes + start, in_.end - start);
                    in_.end -= start;
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
            in_.end += static_cast<std::size_t>(n);
        }
        head_deadline_ = 0;
        if (idle) {
            in_.pos = in_.end;
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
        idle_deadline_ = 0; // the next idle wait starts its own
        if (next != Next::keep_alive) [[unlikely]] {
            if (next == Next::linger) return close_gracefully();
            return next == Next::close ? kClose : kDetach;
        }
    }
}

Connection::Next Connection::handle(std::size_t head_size) {
    counters_->requests_started.add(1); // ended: count()
    // Responses are corked while the client has pipelined more behind this
    // one (BodyReader::start).
    body_.start(request_, head_size);
    request_.remote_user = log_user_ = {};
    const Admission admission = admit(request_, options_, server_.router, path_, sizeof path_);
    Exchange exchange(socket_, body_, server_.router, request_, admission.path);
    if (!options_.real_ip.proxies.empty()) [[unlikely]] {
        if (find_forwarded_client()) exchange.set_forwarded_client(&forwarded_);
    }
    if (admission.verdict == Admission::Verdict::serve) {
        exchange.set_rules(admission.handler->rules());
        // Refused, the handler's 429/503, 403 or 401 (and its error page) went.
        const Handler& handler = *admission.handler;
        if (!handler.limits()) [[likely]] {
            if (let_in(handler.access(), handler.auth(), exchange)) [[likely]]
                handler.serve(exchange);
        } else {
            serve_limited(exchange, handler);
        }
        if (!exchange.finished()) {
            // A route error page is served here, on this stack, not above
            // the handler that chose it.
            exchange.send_pending_page();
            if (exchange.handed_over()) {
                // The socket is the handler's: nothing more is read or
                // written here, and the loop closes it when the coroutine
                // ends, unless a Detached took it over for good (its line
                // is logged when it ends).
                count(*counters_, exchange);
                if (Detached* session = exchange.take_detached()) {
                    start_session(exchange, *session);
                    return Next::detach;
                }
                if (server_.access_log) log(exchange);
                return Next::close;
            }
            if (!exchange.responded() && !exchange.abandoned()) {
                const int error = body_.error();
                const int status = error == -EFBIG       ? 413
                                   : error == -ETIMEDOUT ? 408
                                   : error == -EPROTO    ? 400
                                                         : 500;
                exchange.send_error(status);
                exchange.send_pending_page();
            }
        }
    } else if (admission.verdict == Admission::Verdict::options) {
        exchange.status(204);
        exchange.header("Allow", "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH");
        exchange.send({});
    } else {
        refuse(exchange, admission.status);
    }
    Next next = body_.finish(exchange.closing()) ? Next::keep_alive : Next::linger;
    if (!exchange.finished()) next = Next::close; // a body cut short: only closing tells
    count(*counters_, exchange);
    if (server_.access_log) log(exchange);
    if (next == Next::keep_alive &&
        (!request_.keep_alive || exchange.closing() || Loop::current()->closing_connections())) {
        // Bytes the client sent after a request we end on must not reset the
        // connection before it reads the answer.
        next = !body_.done() || unread_input() ? Next::linger : Next::close;
    }
    return next;
}

void Connection::serve_limited(Exchange& exchange, const Handler& handler) {
    LimitPass pass; // its count, if it takes one, until this returns
    if (pass_limits(pass, *handler.limits(), exchange) &&
        let_in(handler.access(), handler.auth(), exchange)) {
        handler.serve(exchange);
        // A session that outlives the request holds the count for its life.
        if (Detached* session = exchange.detached()) session->keep(pass.keep());
    }
}

bool Connection::pass_limits(LimitPass& pass, const Limits& limits, Exchange& exchange) {
    const LimitPass::Verdict verdict = pass.enter(limits, client_address(), Loop::current()->now());
    if (verdict.status == 0) {
        // Within the burst, without nodelay: the request waits its turn
        // (the answers before it go out first), unless its client leaves.
        if (verdict.wait_ms && !sit_out(verdict.wait_ms)) {
            exchange.abandon();
            return false;
        }
        return true;
    }
    // Seconds, rounded up: a client retrying then is admitted.
    char seconds[16];
    const auto end = std::to_chars(seconds, seconds + sizeof seconds,
                                   std::max<std::uint32_t>(1, (verdict.wait_ms + 999) / 1000))
                         .ptr;
    exchange.header("Retry-After", {seconds, static_cast<std::size_t>(end - seconds)});
    // A body not all here is not waited for (as 413's): the connection
    // closes after the answer, lingering.
    if (request_.has_body() && (request_.chunked || in_.end - in_.pos < request_.content_length))
        exchange.close_after();
    exchange.send_error(verdict.status);
    return false;
}

bool Connection::sit_out(std::uint32_t ms) {
    const std::uint64_t until = Loop::current()->now() + ms;
    const std::int64_t woke = socket_.wait(kReadable, ms); // flushes first
    if (woke == -ETIMEDOUT) return true;
    if (woke == kHangup || (woke > 0 && io::peer_closed(socket_.fd()))) return false;
    // Its next request came (pipelined), or the stop: the rest of the delay
    // as it was, a sleep.
    const std::uint64_t now = Loop::current()->now();
    if (woke > 0 && now < until) io::sleep(static_cast<std::uint32_t>(until - now));
    return true;
}

void Connection::refuse(Exchange& exchange, int status) {
    // A body we will not read (413) would be taken for the next request.
    if (status == 413) exchange.close_after();
    // Refusals get the site's rules and error pages.
    exchange.set_rules(server_.router.site_rules(request_.host));
    // A path no handler takes is the site's: its limits (when it asks for
    // credentials), access rules and auth_basic come first (as nginx's
    // access phase, after the location is chosen).
    const Router& router = server_.router;
    LimitPass pass;
    const Limits* limits = status == 404 ? router.site_limits(request_.host) : nullptr;
    if (status != 404 ||
        ((!limits || pass_limits(pass, *limits, exchange)) &&
         let_in(router.site_access(request_.host), router.site_auth(request_.host), exchange)))
        exchange.send_error(status);
    exchange.send_pending_page();
}

bool Connection::check_access(const AccessRules* access, const BasicAuth* auth,
                              Exchange& exchange) {
    if (!auth) [[likely]] {
        if (admits(access)) [[likely]]
            return true;
        exchange.send_error(403);
        return false;
    }
    return let_in_with_auth(access, *auth, exchange);
}

bool Connection::let_in_with_auth(const AccessRules* access, const BasicAuth& auth,
                                  Exchange& exchange) {
    if (auth.satisfy_any()) {
        // The address or the credentials; failing both, 401 (as nginx).
        if (access && access->allows_explicitly(client_address())) return true;
        return authenticate(auth, exchange);
    }
    // Both: a denied address gets 403 before any 401.
    if (!admits(access)) {
        exchange.send_error(403);
        return false;
    }
    return authenticate(auth, exchange);
}

bool Connection::authenticate(const BasicAuth& auth, Exchange& exchange) {
    std::string_view user;
    const AuthVerdict verdict = auth.check(request_, credentials_, sizeof credentials_, user);
    // As nginx's $remote_user: the name sent, let in or not.
    log_user_ = user;
    switch (verdict) {
    case AuthVerdict::allowed:
        request_.remote_user = user;
        return true;
    case AuthVerdict::refused:
        exchange.header("WWW-Authenticate", auth.challenge());
        exchange.send_error(401);
        return false;
    case AuthVerdict::busy:
        exchange.header("Retry-After", "1");
        exchange.send_error(503);
        return false;
    }
    return false;
}

Connection::Next Connection::answer_bad_request(int status, std::string_view reason) {
    counters_->requests_started.add(1); // ended: count()
    // The head did not parse: what follows cannot be trusted to start a request.
    Request& r = request_;
    r = Request{};
    forwarded_.named = false; // no fields to trust: the peer is the client
    log_user_ = {};
    r.minor = 1;
    r.keep_alive = false;
    body_.none();
    Exchange exchange(socket_, body_, server_.router, request_, {});
    exchange.close_after();
    exchange.send_error(status, reason);
    count(*counters_, exchange);
    if (server_.access_log) log(exchange);
    return Next::linger;
}

bool Connection::unread_input() const {
    if (in_.end > in_.pos) return true;
    int queued = 0;
    return ::ioctl(socket_.fd(), FIONREAD, &queued) == 0 && queued > 0;
}

std::int64_t Connection::close_gracefully() {
    // Half-close, then read until the client closes too (or a limit), so our
    // answer is not destroyed by a reset for data it is still sending.
    socket_.flush();
    if (socket_.settle() != 0) return kClose; // the shutdown would cut a send in flight
    const int fd = socket_.fd();
    ::shutdown(fd, SHUT_WR);
    std::size_t drained = 0;
    Loop& loop = *Loop::current();
    loop.set_timeout(fd, kLingerMs);
    char sink[2048];
    while (drained < kLingerBytes) {
        const ssize_t n = io::read(fd, sink, sizeof sink);
        if (n <= 0) break;
        drained += static_cast<std::size_t>(n);
    }
    return kClose;
}

// --- the client ---------------------------------------------------------------

const IpAddress& Connection::peer_address() {
    if (client_.family == IpAddress::Family::none) {
        const SocketEnds* ends = io::socket_ends(socket_.fd());
        if (ends) client_ = IpAddress::of(reinterpret_cast<const sockaddr*>(&ends->peer));
    }
    return client_;
}

bool Connection::find_forwarded_client() {
    const RealIp& real_ip = options_.real_ip;
    if (!trusts(real_ip.proxies, peer_address())) {
        forwarded_.named = forwarded_.https = false;
        return false;
    }
    return http::find_forwarded_client(request_, real_ip.header, real_ip.proxies, forwarded_);
}

// --- the access log -----------------------------------------------------------

std::string_view Connection::received_line() const {
    // The head starts the buffer; the parser skips empty lines before it.
    const std::size_t start = in_.past_empty_lines(0);
    const std::size_t limit = std::min(in_.end, start + kLoggedLineMax);
    std::size_t stop = start;
    while (stop < limit && in_.bytes[stop] != '\r' && in_.bytes[stop] != '\n') ++stop;
    return {in_.bytes + start, stop - start};
}

std::string_view Connection::tcp_peer_text() {
    if (tcp_peer_state_ == TcpPeer::is_peer) return remote_;
    if (tcp_peer_state_ == TcpPeer::unwritten) {
        sockaddr_in6 peer{};
        socklen_t length = sizeof peer;
        IpAddress address{};
        if (::getpeername(socket_.fd(), reinterpret_cast<sockaddr*>(&peer), &length) == 0)
            address = IpAddress::of(reinterpret_cast<const sockaddr*>(&peer));
        if (!address_text(address, tcp_peer_)) std::memcpy(tcp_peer_, "-", 2);
        tcp_peer_state_ = TcpPeer::written;
    }
    return tcp_peer_;
}

void Connection::start_session(const Exchange& exchange, Detached& session) {
    std::unique_ptr<SessionLog> log;
    if (server_.access_log)
        log = std::make_unique<SessionLog>(server_.access_log, log_entry(exchange));
    session.start(std::move(log));
}

void Connection::log(const Exchange& exchange) {
    server_.access_log->write(log_entry(exchange));
}

AccessLogEntry Connection::log_entry(const Exchange& exchange) {
    if (!remote_[0]) {
        // Once per coroutine, not per request: the peer does not change. The
        // loop noted it at accept.
        std::memcpy(remote_, "-", 2);
        if (const SocketEnds* ends = io::socket_ends(socket_.fd())) {
            const sockaddr_in6& peer = ends->peer;
            if (peer.sin6_family == AF_INET)
                inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(peer).sin_addr, remote_,
                          sizeof remote_);
            else if (peer.sin6_family == AF_INET6)
                inet_ntop(AF_INET6, &peer.sin6_addr, remote_, sizeof remote_);
            else if (peer.sin6_family == AF_UNIX)
                std::memcpy(remote_, "unix:", 6);
        }
    }
    std::string_view line;
    if (!request_.method_name.empty()) {
        const char* start = request_.method_name.data();
        const char* end = static_cast<const char*>(
            std::memchr(start, '\r', static_cast<std::size_t>(in_.bytes + in_.end - start)));
        if (end) line = {start, static_cast<std::size_t>(end - start)};
    } else {
        line = received_line();
    }
    // The client a forwarding header or a PROXY header named goes first, the
    // TCP peer it came through second (http/access_log.hpp).
    const bool forwarded = forwarded_.named;
    const std::string_view client = forwarded ? forwarded_.text : remote_;
    const std::string_view peer =
        forwarded || tcp_peer_state_ != TcpPeer::is_peer ? tcp_peer_text() : std::string_view{};
    return {client,
            peer,
            log_user_,
            line,
            exchange.status(),
            exchange.body_bytes_sent(),
            request_.header("Referer"),
            request_.header("User-Agent"),
            {}};
}

} // namespace weft::http
