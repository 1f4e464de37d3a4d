#pragma once
// One request's trip through a fastcgi handler's backend.

#include "event/poll_event.hpp"
#include "fastcgi/client_watch.hpp"
#include "fastcgi/upstream.hpp"
#include "handlers/fastcgi/backend_failure.hpp"
#include "handlers/fastcgi/params.hpp"
#include "handlers/fastcgi/scripts.hpp"
#include "handlers/fastcgi/spool.hpp"
#include "handlers/fastcgi/state.hpp"
#include "http/exchange.hpp"
#include "http/request.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace weft::handlers {

// One request's trip through the backend: the body spooled (or streamed),
// a connection taken from the upstream's pool, the params and body sent, the
// response relayed to the client, the connection given back; local
// redirects followed. Lives on the request's coroutine for one serve().
class ScriptCall {
public:
    // A buffered response reads from the backend once its spool has this
    // much room (it reads at most that room, so what it read always fits).
    static constexpr std::size_t kMinRead = 8 * 1024;

    ScriptCall(const FastcgiHandler::State& state, http::Exchange& exchange);
    ScriptCall(const ScriptCall&) = delete;
    ScriptCall& operator=(const ScriptCall&) = delete;
    // A coroutine destroyed in a wait (a stop past its grace) unwinds
    // through here holding its connection: it goes back to the pool, or
    // max_conns would count it for good.
    ~ScriptCall();

    // Runs `script`: answers the request one way or another.
    void run(const ScriptTarget& script, std::string_view document_uri);

private:
    enum class Outcome : std::uint8_t {
        done,     // answered (or the client is gone): the backend was released
        retry,    // a kept connection failed before any answer: try a fresh one
        redirect, // a local redirect to redirect_: the backend was released
    };

    Outcome exchange_once(const ScriptTarget& script, std::string_view document_uri,
                          std::string_view request_uri, std::string_view query, bool get);
    bool send_request(const ScriptTarget& script, std::string_view document_uri,
                      std::string_view request_uri, std::string_view query, bool get);
    Outcome read_response();
    // Answers the client once the head is in, gathering the rest of `input`
    // (from `pos`): the whole response when END_REQUEST is in it, else the
    // start of a streamed one (nullopt: the rest streams as it comes).
    std::optional<Outcome> respond(std::string_view body_start, std::string_view input,
                                   std::size_t pos);
    bool stream(std::string_view bytes);
    // What of a streamed body's `bytes` its Content-Length still takes: a
    // backend that sends more has the rest dropped (logged once) and its
    // connection is not kept, as nginx does; the client gets what it was told.
    std::string_view within_length(std::string_view bytes);
    // Whether the response goes through a spool: not when the backend
    // asked otherwise (X-Accel-Buffering: no) or for an event stream.
    bool buffers_response() const;
    // The rest of a buffered response, from `first`: the backend is read as
    // fast as it writes, the client fed as fast as it reads, what lies
    // between spooled; the backend goes back at END_REQUEST. `ended`: it
    // came already, with that many bytes after it.
    Outcome relay(std::string_view first, std::size_t ended);
    static constexpr std::size_t kNotEnded = ~std::size_t{0};
    // The CGI head's status and fields, onto the client's response.
    void copy_head();
    // Whether its fields fit the client's response head.
    bool head_fits() const;
    bool start_response(std::uint64_t length);
    Outcome end_request(std::size_t leftover);
    // The next bytes from the backend into its `in` buffer: a count, 0 at
    // the end of its stream, or -errno (wait_backend's among them).
    ssize_t receive();
    // Closes the backend connection: it is in no state to be reused.
    void drop_backend();
    // Answers a failed step with the backend, when nothing else will.
    void fail_backend(const BackendFailure& failure);
    // Waits for `interest` on the backend, watching the client and the
    // clock: 0, or -ETIMEDOUT, -ECONNABORTED (the client left), -ECANCELED.
    int wait_backend(std::uint8_t interest);
    static int flush_to_backend(void* self, const char* bytes, std::size_t size);
    void fail(int status, const char* what, int error = 0);
    void log_stderr(std::string_view text) const;
    std::string request_line() const;

    const FastcgiHandler::State& state_;
    fastcgi::Upstream& upstream_;
    http::Exchange& exchange_;
    const http::Request& request_;
    PollProxy client_;
    fastcgi::ClientWatch client_watch_; // of client_
    // As this loop resolved it for the request (a switched root's release).
    std::shared_ptr<const std::string> document_root_;
    fastcgi::Backend* backend_ = nullptr;
    Spool* spool_ = nullptr; // the body read whole (de-chunked), unless it streams
    Endpoints endpoints_;
    bool drained_ = false;    // the last read emptied the backend's socket
    bool body_read_ = false;  // client body bytes went to this backend: no retry
    bool last_flush_ = false; // the request's last bytes are being flushed
    bool head_done_ = false;  // the CGI head was parsed
    std::uint64_t body_left_ = ~std::uint64_t{0}; // of a streamed body's Content-Length
    bool overlong_ = false;                       // the backend sent more than its Content-Length
    // A local redirect's target, its path normalised, and the resolver's
    // scratch for an index script's name (on the heap: rare). Three
    // buffers: the normalised path may be a view of the target, and the
    // scratch must overlap neither.
    std::string redirect_;
    std::string redirect_path_;
    std::string redirect_script_;
};

} // namespace weft::handlers
