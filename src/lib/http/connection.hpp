#pragma once
// A client connection, served in its own coroutine: read a head, decide
// whether the server answers it itself (admit()), let the handler answer
// through an Exchange, finish whatever body the handler left unread, and go
// round again while the connection is kept alive; else park or close.
//
// The Connection lives on the coroutine's stack with its buffer, its
// ClientSocket and its BodyReader (what the Exchange writes and reads
// through). It returns to the loop (Op::want_read, which parks the fd
// without a coroutine) when its buffer holds no byte of a next request, or
// when a head is incomplete and nothing more is there to read: then the bytes
// received so far go with the parked fd (a PartialHead, a block their size)
// and the next coroutine starts from them. So a slow client holds no stack:
// the stack-clash probes of this frame make every page of it resident
// (measured: 41 KiB per connection holding half a head).

#include "http/access_log.hpp"
#include "http/body_reader.hpp"
#include "http/client_socket.hpp"
#include "http/forwarded.hpp"
#include "http/parser.hpp"
#include "http/receive_buffer.hpp"
#include "http/request.hpp"
#include "http/server.hpp"
#include "util/cidr.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft {
struct LoopCounters;
struct ParkedState;
} // namespace weft

namespace weft::http {

class Detached;
class Exchange;

// The loop's handler for a server's connections: the final Op for the loop.
// `replaced`, when given, is the flag a reload sets when `server` is
// replaced on this loop (ServerUse::OnLoop::replaced).
// `proxied`: the connection starts with a PROXY protocol header.
std::int64_t serve_connection(int fd, const Server& server, const bool* replaced = nullptr,
                              bool proxied = false);

class Connection {
public:
    static constexpr std::size_t kBufferSize = ReceiveBuffer::kSize;

    Connection(int fd, const Server& server, const bool* replaced, bool proxied = false);
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    std::int64_t run();

private:
    // detach: a Detached took the connection over (http/detached.hpp).
    enum class Next : std::uint8_t { keep_alive, close, linger, detach };

    // The path of a head that came in pieces is kept out of the request
    // loop (noinline): inlined, it cost every request's parse 30
    // instructions in register pressure (callgrind, bench/http.sh).
    //
    // Reads more of a head into the buffer: bytes, 0 at end of stream,
    // -EAGAIN when none are there (the connection parks with the head), or
    // -errno (-ETIMEDOUT past the head's deadline). Waits only while the
    // loop stops (it would close a parked connection).
    [[gnu::noinline]] ssize_t receive_head();
    // Parks with the head received so far, or answers 408 if its time is up.
    [[gnu::noinline]] std::int64_t park_head();
    [[gnu::noinline]] std::int64_t move_to_new_server();
    // Reads the PROXY protocol header a proxied listener's connections start
    // with, and strips it: the client it names becomes the connection's
    // peer. false: invalid, absent or not whole within request_timeout (the
    // connection closes without a response, as the protocol asks). It waits
    // on this coroutine, not parked: a connection from a load balancer
    // sends its header at once.
    [[gnu::noinline]] bool take_proxy_header();
    // Waits warm (Loop::begin_warm) for the next request of a connection
    // this coroutine answered, under keep_alive_timeout (from now: it sets
    // idle_deadline_), once per answer: its first bytes, 0
    // at end of stream, -EAGAIN when the loop cools the wait or has no room
    // for it (the connection parks), or -errno (-ETIMEDOUT past the
    // deadline).
    [[gnu::noinline]] ssize_t receive_warm();
    // Parks with nothing of a request: under request_timeout if it never
    // sent one, else what is left of its idle deadline (closes past it).
    [[gnu::noinline]] std::int64_t park_idle();
    // Parks with nothing of a request until `deadline` (closes past it, or
    // when the loop stops).
    std::int64_t park_until(std::uint64_t deadline);
    // Parks again, with nothing of a request, under the deadline an earlier
    // coroutine parked the connection with (Idle::parked); closes past it.
    [[gnu::noinline]] std::int64_t park_again();
    // Takes back what an earlier coroutine of this connection parked with.
    void resume_head(ParkedState* parked);
    Next handle(std::size_t head_size);
    // Serves a request whose handler has limits (noinline: the request loop
    // pays one pointer test for handlers without): past them and let_in(),
    // or answers 429/503 with Retry-After. Limits come first, as nginx's
    // preaccess phase: they also bound how fast a client may guess passwords.
    [[gnu::noinline]] void serve_limited(Exchange& exchange, const Handler& handler);
    // Whether the client may go on under `limits` (after the delay of its
    // burst); refused, answers 429/503 with Retry-After. `pass` holds the
    // count until the request ends.
    bool pass_limits(LimitPass& pass, const Limits& limits, Exchange& exchange);
    // Waits `ms` for a delayed request; false when its client left first
    // (as nginx's delay, which tests reading meanwhile).
    bool sit_out(std::uint32_t ms);
    // Answers `status` for a request no handler serves (noinline: off the
    // request loop's registers).
    [[gnu::noinline]] void refuse(Exchange& exchange, int status);
    Next answer_bad_request(int status, std::string_view reason);
    void log(const Exchange& exchange);
    // What the access log's line for the exchange says.
    AccessLogEntry log_entry(const Exchange& exchange);
    // Starts the Detached a handler handed the connection to, with its
    // SessionLog; the request was counted.
    [[gnu::noinline]] void start_session(const Exchange& exchange, Detached& session);
    // Whether `rules` (allow_from, deny_from; nullptr: none) let the client
    // in: with none, one pointer test.
    bool admits(const AccessRules* rules) { return !rules || rules->allows(client_address()); }
    // The client of the current request, as access rules (and anything
    // keyed by client) see it: the one a trusted proxy's forwarding header
    // named (find_forwarded_client), else the peer.
    const IpAddress& client_address() {
        return forwarded_.named ? forwarded_.address : peer_address();
    }
    // The peer: the TCP peer the loop noted at accept (SocketEnds, no
    // syscall), or the client a PROXY header named, which replaced it there;
    // looked at once per coroutine.
    [[gnu::noinline]] const IpAddress& peer_address();
    // Reads the request's forwarding fields into forwarded_ when the peer is
    // one of real_ip_from's proxies; whether they said anything. Only with
    // real_ip_from configured: without, forwarded_ stays empty.
    [[gnu::noinline]] bool find_forwarded_client();
    // The TCP peer as text, for the access log's second field: a PROXY
    // header replaced it in SocketEnds, so a proxied connection asks the
    // socket (getpeername, once per coroutine, only for that field).
    std::string_view tcp_peer_text();
    // Whether `access` (allow_from, deny_from) and `auth` (auth_basic; each
    // nullptr for none) let the request in; if not, its 403, 401 (or 503)
    // went. Without either, two pointer tests in line (as a call, 15
    // instructions a request); without auth_basic, admits() too.
    bool let_in(const AccessRules* access, const BasicAuth* auth, Exchange& exchange) {
        if (!access && !auth) [[likely]]
            return true;
        return check_access(access, auth, exchange);
    }
    [[gnu::noinline]] bool check_access(const AccessRules* access, const BasicAuth* auth,
                                        Exchange& exchange);
    [[gnu::noinline]] bool let_in_with_auth(const AccessRules* access, const BasicAuth& auth,
                                            Exchange& exchange);
    // Checks the credentials; refused, sends the 401 (or 503).
    bool authenticate(const BasicAuth& auth, Exchange& exchange);
    // For the log of a head that did not parse: its first line as received,
    // cut at kLoggedLineMax bytes (a stray TLS hello has no line end at all).
    std::string_view received_line() const;
    static constexpr std::size_t kLoggedLineMax = 512;
    // Whether bytes the client sent are unread: buffered, or still in the
    // socket (one syscall: asked only on the way to a close, where unread
    // bytes would turn it into a reset that can destroy the last answer).
    bool unread_input() const;
    std::int64_t close_gracefully();

    const Server& server_;
    const ServerOptions& options_;
    // Set when a reload replaced server_ on this connection's loop.
    const bool* replaced_;
    ClientSocket socket_;
    BodyReader body_;
    RequestParser parser_;
    Request request_;
    // The current head's deadline on the loop's clock, from its first wait
    // for bytes (0: none yet): one for the whole head, however slowly it
    // trickles in, and kept across parks.
    std::uint64_t head_deadline_ = 0;
    // When the connection's idling after its last answer ends (0: it is not
    // idling): kept while only empty lines come, as a park keeps its timer.
    std::uint64_t idle_deadline_ = 0;
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
    bool awaiting_proxy_header_ = false; // a fresh connection of a proxied listener
    char remote_[48] = "";               // the peer's address for the access log, once written
    char tcp_peer_[48];                  // a proxied connection's TCP peer, once written
    // An Authorization field's credentials, decoded: after the check only
    // the user's name stays, which log_user_ (and request_.remote_user, if
    // let in) view. Longer credentials are refused.
    char credentials_[1024];
    std::string_view log_user_;
    char path_[8192]; // the decoded path: never longer than the request line
    ReceiveBuffer in_;
    // The loop's counters (loop_stats.hpp), looked up once per coroutine.
    LoopCounters* counters_;
    IpAddress client_; // the peer: family none until peer_address() looks
    // The TCP peer is the peer, or a PROXY header named the peer and the TCP
    // peer's text (tcp_peer_) is for tcp_peer_text() to write. Beside
    // forwarded_'s flags: the constructor sets the three bytes together.
    enum class TcpPeer : std::uint8_t { is_peer, unwritten, written };
    TcpPeer tcp_peer_state_;
    // The current request's client as its forwarding fields name it (none,
    // and never written, without real_ip_from).
    ForwardedClient forwarded_;
};

} // namespace weft::http
