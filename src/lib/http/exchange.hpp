#pragma once
// One request and its response, as a handler sees them.
//
// A response is a head, then a body. The handler sets the status and its own
// header fields; the Exchange adds Date, Server, Content-Length (or
// Transfer-Encoding: chunked) and Connection. Sending:
//   send(body)            head + a body in memory, in one send when it fits;
//   send_file(fd, o, n)   head, then n bytes of a file by sendfile;
//   send_error(status)    a short text/plain error page;
//   begin(length) + write()/write_file() ... for bodies in pieces (multipart
//                         ranges, proxied bodies): length known or
//                         kUnknownLength (chunked in HTTP/1.1, else the
//                         connection closes after the body), then finish().
//                         write_some() instead of write() never waits: it
//                         sends what the socket takes now.
// For HEAD the head is sent with the length the body would have had, and the
// body calls do nothing.
//
// Every call returns 0 or -errno; after an error the connection is closed
// and later calls fail at once, so a handler may ignore the results.
//
// The configuration's response rules (http/response_rules.hpp), when the
// Connection passes them, go on every head but a 101's: fields dropped and
// added, Cache-Control and Expires below 400; send_error() serves the
// configured page for its status instead of the built-in one.
//
// The Exchange writes to the client through a ClientSocket and reads the body
// through a BodyReader; the Connection that owns both runs the request loop
// around it and knows nothing of what the handler does between.

#include "http/client_socket.hpp"
#include "http/detached.hpp"
#include "http/request.hpp"
#include "http/response_rules.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

namespace weft::http {

class BodyReader;
class Router;
struct ForwardedClient;

inline constexpr std::uint64_t kUnknownLength = ~std::uint64_t{0};

// The client's connection as a handler takes it over when it switches
// protocols (Exchange::switch_protocols) or streams a body that ends with the
// connection (Exchange::stream_to_close): the socket, and the bytes the
// client sent after the request that the server had read already. They come
// before anything the socket still holds, and stay valid until serve()
// returns (they are in the connection's buffer).
//
// From then on the socket is the handler's alone, for the rest of serve():
// the Exchange neither sends nor reads, and the Connection neither reads,
// writes, parks, lingers on, nor closes it. The handler must not close it
// either (the loop's entry for the fd would go stale; shutdown() is fine):
// when serve() returns, the Connection writes the access-log line (101, or
// the stream's status) and ends its coroutine with Op::abort, and the loop
// closes the fd, as it does when the coroutine is destroyed in a wait (a stop
// past its grace). The coroutine and its stack are the handler's meanwhile:
// the connection cannot park without one.
//
// Or the handler hands the connection on for good, to a Detached
// (Exchange::detach, http/detached.hpp): when serve() returns, the request is
// counted, the Detached started and the coroutine ends with Op::detach; the
// fd stays open, the Detached's, and its access-log line is its SessionLog's,
// written when it ends.
//
// The socket is edge-triggered: read it (ClientSocket::receive, which knows
// when the last read emptied it) before waiting on it, or bytes already
// there raise no new edge. The close does not linger: a protocol whose peer
// may still be sending ends its own way first (a WebSocket's close
// handshake), or its last bytes can be lost to a reset.
struct HandOver {
    ClientSocket* socket = nullptr;
    std::string_view received;
};

class Exchange {
public:
    Exchange(ClientSocket& socket, BodyReader& body, const Router& router, const Request& request,
             std::string_view path)
        : socket_(socket), body_(body), router_(router), request_(&request), path_(path) {}
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;

    // The configuration's rules for this response (nullptr: none), before
    // anything is sent.
    void set_rules(const ResponseRules* rules) { rules_ = rules; }

    // Room for the handler's field lines ("Name: value\r\n" each).
    static constexpr std::size_t kFieldCapacity = 4096;

    // While an error page is served, the internal request for it.
    const Request& request() const { return *request_; }
    // The request's path, percent-decoded and normalised (http/path.hpp).
    std::string_view path() const { return path_; }
    bool is_head() const { return request_->method == Method::head; }

    // --- the response head ---
    void status(int code) { status_ = code; }
    int status() const { return status_; }
    // Appends a field. One holding CR or LF, or more fields than fit, fail
    // the response with a 500 instead.
    void header(std::string_view name, std::string_view value);
    // As header(), for a field whose name and value were checked already to
    // hold no CR, LF or NUL (a FastCGI backend's head, which its parser
    // refuses otherwise): only the room is checked.
    void header_checked(std::string_view name, std::string_view value);
    // Appends ready-made field lines ("Name: value\r\n" each), unchecked:
    // only for lines the server built from its own data (a cache's stored
    // head), never from anything a request or a backend sent.
    void header_lines(std::string_view lines);
    // Closes the connection after this response.
    void close_after() { close_after_ = true; }
    // The client left (or half-closed, which a proxy cannot tell from
    // leaving) before its answer: none is sent, the access log says 499 (as
    // nginx's), and the connection closes.
    void abandon() {
        close_after_ = true;
        abandoned_ = true;
        status_ = 499;
    }
    bool abandoned() const { return abandoned_; }

    // --- sending ---
    int send(std::string_view body);
    // As send(), but the body only as far as the socket takes it now: how
    // many of its bytes went (the rest goes by write_some(), then finish()),
    // or -errno. The head always goes whole.
    ssize_t send_some(std::string_view body);
    int send_file(int fd, off_t offset, std::uint64_t length);
    // The configured error page for `status`, if any: an in-memory file, or
    // a path the site's handler for it serves, its status forced to
    // `status`, once the handler has returned (send_pending_page()); else,
    // or when that handler sends an error itself or nothing, the built-in
    // page: never a second configured one.
    // The built-in page reads "404 Not Found", then `detail` on a line of its own if
    // given. Fields the handler set go out with it (Allow for a 405), but
    // for those that described the body it replaces (Content-Type,
    // Content-Encoding).
    int send_error(int status, std::string_view detail = {});
    int begin(std::uint64_t length);
    int write(std::string_view bytes);
    // Sends what the socket takes of `bytes` now, without waiting: how many
    // were taken (fewer than all: the socket was full, wait until it is
    // writable), or -errno. In chunks, a chunk begun is finished by the next
    // calls, which must pass on from the first byte not taken.
    ssize_t write_some(std::string_view bytes);
    int write_file(int fd, off_t offset, std::uint64_t length);
    int finish();

    // --- the request body (de-chunked; max_request_body enforced: 413) ---
    // Some bytes, 0 at its end, or -errno. Sends 100 Continue first when the
    // client asked for it.
    ssize_t read_body(void* buffer, std::size_t n);

    // Serves the route error page send_error() left pending, if any: the
    // Connection calls it when the handler has returned, so that the
    // page's handler runs on the stack where the first one ran, not above
    // it (two files handlers' frames on top of each other pass 64 KiB).
    void send_pending_page() {
        if (state_ == State::page_pending) serve_pending_page();
    }

    // Pushes out responses held back for pipelining: call it before waiting on
    // anything but the client (a backend, a timer).
    void flush();

    // Whether the head has gone out, and whether the response is complete.
    bool responded() const { return state_ != State::fresh; }
    bool finished() const { return state_ == State::finished; }
    bool closing() const { return close_after_; }
    std::uint64_t body_bytes_sent() const { return sent_; }

    // --- switching protocols (a WebSocket) ---
    // Answers 101 Switching Protocols, with the fields the handler set and
    // `Upgrade: protocol` and `Connection: upgrade`, and hands the connection
    // over into `out` (see HandOver). Only before any response, for an
    // HTTP/1.1 request whose body is done (none, or read to its end): else
    // -EALREADY, -EPROTO, -EBUSY, and nothing is sent. Fields that did not
    // fit (or held CR or LF) answer 500 as for any response: -EMSGSIZE.
    int switch_protocols(std::string_view protocol, HandOver& out);
    // For a body that runs until the connection closes (Server-Sent Events):
    // sends the head (the status set, 200 by default, and the handler's
    // fields; `Connection: close`, neither Content-Length nor chunks: RFC
    // 9112 §6.3) and hands the connection over into `out`, as
    // switch_protocols() does. Only for GET, before any response, its body
    // done: else -EPROTO, -EALREADY, -EBUSY, and nothing is sent; fields
    // that did not fit answer 500: -EMSGSIZE.
    int stream_to_close(HandOver& out);
    bool handed_over() const { return state_ == State::handed_over; }
    // After switch_protocols() or stream_to_close() succeeded: `session`
    // takes the connection over for good when serve() returns (see
    // HandOver), owned by the Exchange until then. Else, or a second time,
    // it is deleted: -EPROTO.
    int detach(Detached* session);
    // The Connection's, when serve() returned.
    Detached* detached() const { return state_ == State::handed_over ? detached_ : nullptr; }
    Detached* take_detached() {
        return state_ == State::handed_over ? std::exchange(detached_, nullptr) : nullptr;
    }

    // --- what else a handler may need of its connection ---
    // The client's socket, for awaiting it (a hang-up while a backend
    // answers): its bytes go through the calls above.
    int client_fd() const { return socket_.fd(); }
    // Whether the client sent this request in a pipeline: behind one
    // answered before it, or with a next one buffered behind it. Such a
    // client may shut its side after its last request and still read every
    // answer: its end of stream does not say it left.
    bool in_pipeline() const;
    // The longest a send may wait for the client to take bytes.
    std::uint32_t send_timeout_ms() const { return socket_.send_timeout_ms(); }
    // The server's router (a local redirect routes again).
    const Router& router() const { return router_; }
    // Who the client of this request is, when a trusted proxy's forwarding
    // fields said (http/forwarded.hpp: the address, its port, https);
    // nullptr: the connection's peer is, as the loop noted it at accept.
    const ForwardedClient* forwarded_client() const { return forwarded_; }
    void set_forwarded_client(const ForwardedClient* client) { forwarded_ = client; }

private:
    // page_pending: send_error() chose a route error page; every call fails
    // (-ECANCELED) until send_pending_page() serves it.
    enum class State : std::uint8_t {
        fresh,
        streaming,
        finished,
        failed,
        handed_over,
        page_pending
    };

    // With `taken`, the body only as far as the socket takes it now.
    int send_head(std::uint64_t length, std::string_view body, bool more,
                  std::size_t* taken = nullptr);
    // write_some()'s round: the rest of the chunk under way (or a new one
    // of all of `bytes`), until done or `full`.
    ssize_t write_now(std::string_view bytes, bool& full);
    // Right after the handler's fields: where Connection and the blank line go.
    char* fields_end() { return head_ + kLeadRoom + head_size_; }
    int fail(int error);
    // header()'s append, its field checked.
    void append_field(std::string_view name, std::string_view value);
    // The configuration's rules, on the head about to go (noinline: off the
    // path of a response without rules); false when its lines did not fit
    // after the handler's fields.
    [[gnu::noinline]] bool apply_rules();
    [[gnu::noinline]] void serve_pending_page();

    ClientSocket& socket_;
    BodyReader& body_;
    const Router& router_;
    const Request* request_;
    std::string_view path_;
    const ResponseRules* rules_ = nullptr;
    const ForwardedClient* forwarded_ = nullptr;
    // Valid once handed over (no store for an ordinary request).
    Detached* detached_;
    // The route error page chosen (valid once page_chosen_): its handler
    // serves it in page_pending, then serving_page_.
    const ErrorPageTarget* pending_page_;
    int status_ = 200;
    State state_ = State::fresh;
    bool close_after_ = false;
    bool abandoned_ = false;
    bool chunked_ = false;     // the body goes out in chunks
    bool overflow_ = false;    // a field did not fit, or held CR or LF: 500
    bool page_chosen_ = false; // a route error page was: never a second
    bool serving_page_ = false;
    bool to_close_ = false;    // stream_to_close(): no chunks, the close ends the body
    std::uint64_t length_ = 0; // announced body length, or kUnknownLength
    std::uint64_t sent_ = 0;   // body bytes written so far
    // write_some()'s chunk under way: its data bytes not yet sent, and the
    // framing owed before more data (the rest of its size line, or of the
    // CRLF that closed the one before).
    std::uint64_t chunk_left_ = 0;
    bool in_chunk_ = false;
    std::uint8_t owed_at_ = 0;
    std::uint8_t owed_size_ = 0;
    char owed_[24];
    // The head is assembled in place: the handler's fields go at
    // head_[kLeadRoom...]; at sending, the status line, Server, Date and the
    // length are written right before them (backwards, no copy of the lead)
    // and Connection and the blank line after.
    static constexpr std::size_t kLeadRoom = 192;
    // The rules' lines share it with the handler's fields: 2 KiB more for
    // them cost every connection's stack frame a page touched by the
    // stack-clash probes.
    static constexpr std::size_t kHeadCapacity = kFieldCapacity;
    static constexpr std::size_t kTailRoom = 32;
    std::size_t head_size_ = 0; // bytes of fields
    char head_[kLeadRoom + kHeadCapacity + kTailRoom];
};

} // namespace weft::http
