#include "handlers/fastcgi.hpp"

#include "event/waker.hpp"
#include "handlers/fastcgi_params.hpp"
#include "handlers/fastcgi_scripts.hpp"
#include "handlers/fastcgi_spool.hpp"
#include "handlers/file_access.hpp"
#include "handlers/file_open.hpp"
#include "handlers/files.hpp"
#include "handlers/redirect.hpp"
#include "http/exchange.hpp"
#include "http/path.hpp"
#include "http/router.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace weft::handlers {

using fastcgi::AcquireError;
using fastcgi::Backend;
using fastcgi::CgiHead;
using fastcgi::RecordReader;
using fastcgi::RecordWriter;

namespace {

// A request body is kept in memory up to this, then in a temp file.
constexpr std::size_t kBodyMemory = 8 * 1024;
// A buffered response reads from the backend once its spool has this much
// room (it reads at most that room, so what it read always fits).
constexpr std::size_t kMinRead = 8 * 1024;
// Local redirects followed for one request before giving up (500).
constexpr int kMaxLocalRedirects = 8;

std::uint32_t to_ms(std::chrono::milliseconds d) {
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(d.count(), 1, UINT32_MAX));
}

// recv and send through syscall(), as the connection does: no
// cancellation-point toggling around each call.
ssize_t receive_bytes(int fd, void* into, std::size_t n) {
    return ::syscall(SYS_recvfrom, fd, into, n, 0, nullptr, nullptr);
}

ssize_t send_bytes(int fd, const void* bytes, std::size_t n) {
    return ::syscall(SYS_sendto, fd, bytes, n, MSG_NOSIGNAL, nullptr, 0);
}

// Whether the loop saw the backend shut its side of a kept connection (PHP-FPM
// does after END_REQUEST once a child reaches pm.max_requests): the sticky
// bits of its fd's entry, so asking costs no syscall. The edge that brought
// it may have been taken with the last response's bytes, so no later wait
// would see it.
bool backend_closed(int fd) {
    return Loop::current()->table()[fd].ready & (kPeerClosed | kHungUp);
}

// Reads the whole request body into `body`: 0, or the read's error (-EIO:
// the spool's).
int fill(http::Exchange& exchange, Spool& body) {
    for (;;) {
        std::size_t room = 64 * 1024;
        char* into = body.reserve(room);
        if (!into) return -EIO;
        const ssize_t n = exchange.read_body(into, room);
        if (n <= 0) return static_cast<int>(n);
        body.commit(static_cast<std::size_t>(n));
    }
}

} // namespace

struct FastcgiHandler::State {
    std::string name; // "fastcgi /prefix", for the error log
    std::string root; // no trailing '/'
    OwnedFd root_fd;
    std::unique_ptr<ScriptResolver> scripts;
    std::unique_ptr<FilesHandler> files; // static = on
    std::unique_ptr<fastcgi::Upstream> own_upstream;
    fastcgi::Upstream* upstream = nullptr;
    const http::Handler* handler = nullptr; // the handler this is the state of
    std::string server_name;                // the site's first host; "": the request's Host
    std::string fixed_params;               // encoded: fastcgi_params.hpp
    std::string extra_params;
    bool request_buffering = true;
    std::size_t buffers = 0; // a response's spool: memory, then a file
    std::uint64_t max_temp_file_size = 0;
};

namespace {

// One request's trip through the backend.
class Proxy {
public:
    Proxy(const FastcgiHandler::State& state, http::Exchange& exchange)
        : state_(state), upstream_(*state.upstream), exchange_(exchange),
          request_(exchange.request()), client_(*Loop::current(), exchange.client_fd()),
          client_watch_(client_), document_root_(state.scripts->document_root()) {}
    Proxy(const Proxy&) = delete;
    Proxy& operator=(const Proxy&) = delete;
    // A coroutine destroyed in a wait (a stop past its grace) unwinds
    // through here holding its connection: it goes back to the pool, or
    // max_conns would count it for good.
    ~Proxy() {
        if (backend_) drop_backend();
    }

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
    // Answers what a failed receive() means, when nothing else will.
    void fail_reading(ssize_t result);
    // Waits for `interest` on the backend, watching the client and the
    // clock: 0, or -ETIMEDOUT, -ECONNABORTED (the client left), -ECANCELED.
    int wait_backend(std::uint8_t interest);
    static int flush_to_backend(void* self, const char* bytes, std::size_t size);
    void fail(int status, const char* what, int error = 0);
    void log_stderr(std::string_view text) const;
    std::string_view request_line() const;

    const FastcgiHandler::State& state_;
    fastcgi::Upstream& upstream_;
    http::Exchange& exchange_;
    const http::Request& request_;
    PollProxy client_;
    fastcgi::ClientWatch client_watch_; // of client_
    // As this loop resolved it for the request (a switched root's release).
    std::shared_ptr<const std::string> document_root_;
    Backend* backend_ = nullptr;
    Spool* spool_ = nullptr; // the body read whole (de-chunked), unless it streams
    Endpoints endpoints_;
    bool drained_ = false;   // the last read emptied the backend's socket
    bool body_read_ = false; // client body bytes went to this backend: no retry
    bool head_done_ = false; // the CGI head was parsed
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

std::string_view Proxy::request_line() const {
    const char* start = request_.method_name.data();
    const char* end = request_.target.data() + request_.target.size();
    return {start, static_cast<std::size_t>(end - start)};
}

void Proxy::fail(int status, const char* what, int error) {
    const std::string_view line = request_line();
    std::fprintf(stderr, "weft: %s: %s%s%s (\"%.*s\")\n", state_.name.c_str(), what,
                 error ? ": " : "", error ? std::strerror(error) : "",
                 static_cast<int>(line.size()), line.data());
    if (!exchange_.responded()) exchange_.send_error(status);
}

void Proxy::log_stderr(std::string_view text) const {
    const std::string_view line = request_line();
    while (!text.empty()) {
        std::size_t end = text.find('\n');
        std::string_view one = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        while (!one.empty() && (one.back() == '\r' || one.back() == '\n')) one.remove_suffix(1);
        if (one.empty()) continue;
        std::fprintf(stderr, "weft: %s: stderr: %.*s (\"%.*s\")\n", state_.name.c_str(),
                     static_cast<int>(one.size()), one.data(), static_cast<int>(line.size()),
                     line.data());
    }
}

int Proxy::wait_backend(std::uint8_t interest) {
    // Responses corked for pipelining go out before a wait on something else.
    exchange_.flush();
    PollEvent backend(backend_->poll(), interest);
    return client_watch_.await(backend, upstream_.options().read_timeout_ms);
}

int Proxy::flush_to_backend(void* self, const char* bytes, std::size_t size) {
    Proxy& p = *static_cast<Proxy*>(self);
    while (size) {
        const ssize_t n = send_bytes(p.backend_->fd(), bytes, size);
        if (n > 0) {
            bytes += n;
            size -= static_cast<std::size_t>(n);
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return -errno;
        if (const int waited = p.wait_backend(kWritable)) return waited;
    }
    return 0;
}

void Proxy::run(const ScriptTarget& first, std::string_view document_uri) {
    // A body is read whole first, before a backend is taken: a slow upload
    // must not hold a PHP worker, a chunked one needs its exact
    // CONTENT_LENGTH, and a retry on a fresh connection can send it again.
    // (Its memory is on the heap, taken with the first byte: none for a GET.)
    Spool body(kBodyMemory, ~std::uint64_t{0});
    if (request_.chunked || (state_.request_buffering && request_.has_body())) {
        const int error = fill(exchange_, body);
        if (error == -EIO) return fail(500, "the request body could not be spooled");
        if (error < 0) return; // the connection answers 413/408/400
        spool_ = &body;
    }
    endpoints_.look_up(client_.fd());

    ScriptTarget script = first;
    std::string_view request_uri = request_.target;
    std::string_view query = request_.query;
    bool get = false;
    for (int redirects = 0;; ++redirects) {
        AcquireError error = AcquireError::none;
        backend_ = upstream_.acquire(client_watch_, error);
        Outcome outcome = Outcome::done;
        for (int attempt = 0; backend_; ++attempt) {
            outcome = exchange_once(script, document_uri, request_uri, query, get);
            if (outcome != Outcome::retry) break;
            if (attempt == 1) {
                drop_backend();
                return fail(502, "the backend closed the connection before answering");
            }
            // The backend closed a kept connection before answering: once
            // more on a fresh one (nothing was lost: a body is in the spool).
            backend_ = upstream_.reconnect(backend_, error);
        }
        if (error != AcquireError::none) {
            switch (error) {
            case AcquireError::unavailable:
                return fail(502, "no backend accepted a connection");
            case AcquireError::timed_out:
                return fail(504, "connecting to the backend timed out");
            case AcquireError::queue_timeout:
                return fail(503, "every backend connection stayed busy for queue_timeout");
            case AcquireError::client_gone:
            case AcquireError::none:
                exchange_.abandon();
                return;
            }
        }
        if (outcome != Outcome::redirect) return;

        // A local redirect (RFC 3875 §6.2.2): run the script it names as a GET.
        if (redirects == kMaxLocalRedirects) return fail(500, "too many local redirects");
        const std::string_view target = redirect_;
        const std::size_t mark = target.find('?');
        const auto normal = http::normalize_path(target.substr(0, mark), redirect_path_.data());
        if (!normal) return fail(502, "the backend redirected to a bad path");
        // Only a path this handler answers runs here: one that routes to
        // another handler (a files prefix, a denied one, another
        // application) is the client's to ask for, like any that is no
        // script, or a redirect could run what no request may reach.
        const http::Router& router = exchange_.router();
        const bool ours = router.route(request_.host, *normal) == state_.handler;
        if (ours) {
            redirect_script_.resize(state_.scripts->scratch_size(normal->size()));
            script = state_.scripts->resolve(*normal, redirect_script_.data());
        }
        if (!ours || script.kind != ScriptTarget::Kind::script) {
            // Let the client fetch it.
            if (target.size() + sizeof "Location: \r\n" > http::Exchange::kFieldCapacity)
                return fail(502, "the backend's Location does not fit a response head");
            exchange_.status(302);
            exchange_.header("Location", target);
            exchange_.send({});
            return;
        }
        request_uri = target;
        query = mark == std::string_view::npos ? std::string_view{} : target.substr(mark + 1);
        document_uri = script.path_info.empty() ? script.script_name : *normal;
        get = true;
        spool_ = nullptr;
        head_done_ = false;
    }
}

Proxy::Outcome Proxy::exchange_once(const ScriptTarget& script, std::string_view document_uri,
                                    std::string_view request_uri, std::string_view query,
                                    bool get) {
    // Not down a kept connection the backend has shut: once the client's body
    // is read into it, no retry is possible. The loop may have seen that for
    // free; a body still to stream is worth a syscall to ask the socket.
    if (backend_->reused()) {
        const bool streams_body = !get && !spool_ && request_.has_body();
        if (backend_closed(backend_->fd()) || (streams_body && io::peer_closed(backend_->fd())))
            return Outcome::retry;
    }
    if (!send_request(script, document_uri, request_uri, query, get))
        return backend_ ? Outcome::retry : Outcome::done; // retry: still held
    return read_response();
}

bool Proxy::send_request(const ScriptTarget& script, std::string_view document_uri,
                         std::string_view request_uri, std::string_view query, bool get) {
    RecordWriter writer(backend_->out, Backend::kOutSize, flush_to_backend, this);
    writer.begin_request(upstream_.keeps_connections());

    char length_text[24] = "";
    std::uint64_t length = 0;
    if (!get) {
        length = spool_ ? spool_->size() : request_.content_length;
        if (spool_ || request_.has_body())
            *std::to_chars(length_text, length_text + 23, length).ptr = '\0';
    }
    ScriptParams params;
    params.document_root = *document_root_;
    params.script_name = script.script_name;
    params.path_info = script.path_info;
    params.document_uri = document_uri;
    params.request_uri = request_uri;
    params.query = query;
    params.method = get ? std::string_view{"GET"} : request_.method_name;
    params.content_length = length_text;
    // SERVER_NAME is the site's name, as nginx's $server_name: the Host a
    // client sent is HTTP_HOST's, and a script building URLs from it could
    // be led to any host.
    std::string_view host = state_.server_name;
    if (host.empty()) {
        host = request_.host;
        if (!host.empty() && host.front() != '[')
            host = host.substr(0, host.rfind(':'));
        else if (!host.empty())
            host = host.substr(0, host.find(']') + 1);
    }
    params.server_name = host;
    params.fixed = state_.fixed_params;
    params.extra = state_.extra_params;
    write_params(writer, request_, params, endpoints_);
    writer.end_params();

    int body_error = 0;
    if (length && spool_) {
        for (std::uint64_t offset = 0; offset < length && !writer.error();) {
            const std::span<char> room = writer.stdin_space(
                static_cast<std::size_t>(std::min<std::uint64_t>(length - offset, 1 << 20)));
            if (room.empty()) break;
            body_error = spool_->read(offset, room.data(), room.size());
            if (body_error) break;
            writer.commit_stdin(room.size());
            offset += room.size();
        }
    } else if (length) {
        // Streamed as it arrives: read straight into STDIN records.
        for (std::uint64_t left = length; left && !writer.error();) {
            const std::span<char> room = writer.stdin_space(
                static_cast<std::size_t>(std::min<std::uint64_t>(left, 1 << 20)));
            if (room.empty()) break;
            const ssize_t n = exchange_.read_body(room.data(), room.size());
            if (n <= 0) {
                body_error = n < 0 ? static_cast<int>(n) : -ECONNRESET;
                break;
            }
            body_read_ = true;
            writer.commit_stdin(static_cast<std::size_t>(n));
            left -= static_cast<std::uint64_t>(n);
        }
    }
    if (body_error) {
        // The client's body failed: the connection answers it (413, 408, 400).
        drop_backend();
        exchange_.close_after();
        return false;
    }
    writer.end_stdin();
    const int error = writer.flush();
    if (error == 0) return true;

    const bool retry = backend_->reused() && !body_read_ && error != -ETIMEDOUT &&
                       error != -ECONNABORTED && error != -ECANCELED;
    if (retry) return false; // the caller sees retry through backend_ still set
    drop_backend();
    if (error == -ECONNABORTED || error == -ECANCELED) {
        exchange_.abandon();
    } else if (error == -ETIMEDOUT) {
        fail(504, "sending the request to the backend timed out");
    } else {
        fail(502, "sending the request to the backend failed", -error);
    }
    return false;
}

ssize_t Proxy::receive() {
    Backend& b = *backend_;
    for (;;) {
        if (!drained_) {
            const ssize_t n = receive_bytes(b.fd(), b.in, Backend::kInSize);
            if (n >= 0) {
                // A short read emptied the socket: what comes next raises a
                // new edge, so the next call can wait without a read first.
                drained_ = static_cast<std::size_t>(n) < Backend::kInSize;
                return n;
            }
            if (errno == EINTR) continue;
            if (errno != EAGAIN) return -errno;
        }
        drained_ = false;
        if (const int waited = wait_backend(kReadable)) return waited;
    }
}

void Proxy::drop_backend() {
    upstream_.release(backend_, false);
    backend_ = nullptr;
}

void Proxy::fail_reading(ssize_t result) {
    drop_backend();
    if (result == -ECONNABORTED || result == -ECANCELED) {
        exchange_.abandon(); // the client left: nobody to answer
    } else if (result == -ETIMEDOUT) {
        fail(504, "the backend did not answer within read_timeout");
    } else if (result == 0) {
        fail(502, "the backend closed the connection before the end of its response");
    } else {
        fail(502, "reading from the backend failed", static_cast<int>(-result));
    }
}

Proxy::Outcome Proxy::read_response() {
    Backend& b = *backend_;
    b.reader.reset();
    b.cgi.reset();
    drained_ = true; // the answer cannot be there yet: wait before the first read
    for (bool first = true;; first = false) {
        const ssize_t n = receive();
        if (n <= 0) {
            // A kept connection the backend had closed: once more on a new one.
            const bool closed = n == 0 || n == -ECONNRESET || n == -EPIPE;
            if (closed && first && b.reused() && !body_read_) return Outcome::retry;
            fail_reading(n); // a response begun is cut short: the client's connection closes
            return Outcome::done;
        }
        if (first) b.answered(); // a child has it: the pool keeps children again
        const std::string_view input{b.in, static_cast<std::size_t>(n)};
        std::size_t pos = 0;
        for (;;) {
            std::size_t used = 0;
            const RecordReader::Item item = b.reader.next(input.substr(pos), used);
            pos += used;
            switch (item.kind) {
            case RecordReader::Kind::need_more:
                break;
            case RecordReader::Kind::stdout_data: {
                if (head_done_) {
                    if (!stream(within_length(item.data))) return Outcome::done;
                    continue;
                }
                std::size_t taken = 0;
                const CgiHead::Status status = b.cgi.feed(item.data, taken);
                if (status == CgiHead::Status::incomplete) continue;
                if (status == CgiHead::Status::error) {
                    fail(502, b.cgi.error()); // before b goes with the connection
                    drop_backend();
                    return Outcome::done;
                }
                head_done_ = true;
                if (auto outcome = respond(item.data.substr(taken), input, pos)) return *outcome;
                break; // respond() took the rest of this read
            }
            case RecordReader::Kind::stderr_data:
                log_stderr(item.data);
                continue;
            case RecordReader::Kind::end_request:
                if (head_done_) exchange_.finish(); // a client gone by now changes nothing
                return end_request(input.size() - pos);
            case RecordReader::Kind::error:
                fail(502, item.error);
                drop_backend();
                return Outcome::done;
            }
            break; // need_more, or the rest taken
        }
    }
}

// Whether a field of the CGI head goes on to the client: framing is this
// server's, and X-Accel-* are instructions to it.
bool passes_on(std::string_view name) {
    switch (name.empty() ? 0 : name[0] | 0x20) { // most pass on the first letter
    case 'c':
    case 't':
    case 'k':
    case 'x':
        break;
    default:
        return true;
    }
    return !http::equals_ignoring_case(name, "Content-Length") &&
           !http::equals_ignoring_case(name, "Transfer-Encoding") &&
           !http::equals_ignoring_case(name, "Connection") &&
           !http::equals_ignoring_case(name, "Keep-Alive") &&
           !(name.size() > 8 && http::equals_ignoring_case(name.substr(0, 8), "X-Accel-"));
}

bool Proxy::head_fits() const {
    const CgiHead& cgi = backend_->cgi;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < cgi.field_count(); ++i) {
        const fastcgi::CgiField& field = cgi.fields()[i];
        if (passes_on(field.name)) bytes += field.name.size() + field.value.size() + 4;
    }
    return bytes <= http::Exchange::kFieldCapacity;
}

void Proxy::copy_head() {
    const CgiHead& cgi = backend_->cgi;
    exchange_.status(cgi.status());
    for (std::size_t i = 0; i < cgi.field_count(); ++i) {
        const fastcgi::CgiField& field = cgi.fields()[i];
        if (passes_on(field.name)) exchange_.header(field.name, field.value);
    }
}

bool Proxy::start_response(std::uint64_t length) {
    copy_head();
    return exchange_.begin(length) == 0;
}

std::optional<Proxy::Outcome> Proxy::respond(std::string_view body_start, std::string_view input,
                                             std::size_t pos) {
    Backend& b = *backend_;
    if (b.cgi.local_redirect()) {
        redirect_ = b.cgi.location();
        redirect_path_.resize(redirect_.size());
        // Its body (there should be none) is not read: the connection goes.
        drop_backend();
        return Outcome::redirect;
    }
    if (!head_fits()) {
        fail(502, "the backend's response fields pass 4096 bytes");
        drop_backend();
        return Outcome::done;
    }
    // Gather the rest of what was read: the body's pieces are moved together
    // over the record headers between them (each moves toward the front).
    char* const body = const_cast<char*>(body_start.data());
    char* end = body + body_start.size();
    bool ended = false;
    std::size_t leftover = 0;
    for (;;) {
        std::size_t used = 0;
        const RecordReader::Item item = b.reader.next(input.substr(pos), used);
        pos += used;
        if (item.kind == RecordReader::Kind::stdout_data) {
            std::memmove(end, item.data.data(), item.data.size());
            end += item.data.size();
        } else if (item.kind == RecordReader::Kind::stderr_data) {
            log_stderr(item.data);
        } else if (item.kind == RecordReader::Kind::end_request) {
            ended = true;
            leftover = input.size() - pos;
            break;
        } else if (item.kind == RecordReader::Kind::error) {
            fail(502, item.error);
            drop_backend();
            return Outcome::done;
        } else {
            break;
        }
    }
    const std::string_view gathered{body, static_cast<std::size_t>(end - body)};
    const std::uint64_t announced = b.cgi.content_length();
    if (ended) {
        // (PHP sends no body for HEAD, whatever length it announces.)
        const bool head = exchange_.is_head();
        if (announced != CgiHead::kNoLength && announced != gathered.size() && !head) {
            drop_backend();
            fail(502, "the backend's Content-Length does not match its body");
            return Outcome::done;
        }
        // The whole response is here: one send, with its length.
        // (A client gone by now leaves the backend connection fine to keep.)
        copy_head();
        if (head) {
            // No length announced: none is sent (a 0 would say GET's body
            // is empty, RFC 9110 §9.3.2).
            const std::uint64_t length =
                announced == CgiHead::kNoLength ? http::kUnknownLength : announced;
            if (exchange_.begin(length) == 0) exchange_.finish();
            return end_request(leftover);
        }
        // What the client's socket does not take now is spooled: a client
        // that does not read must not hold the backend.
        const ssize_t sent = exchange_.send_some(gathered);
        if (sent < 0 || static_cast<std::size_t>(sent) == gathered.size())
            return end_request(leftover);
        return relay(gathered.substr(static_cast<std::size_t>(sent)), leftover);
    }
    if (!start_response(announced == CgiHead::kNoLength ? http::kUnknownLength : announced))
        return end_request(1); // the client is gone: the backend cannot be kept
    if (announced != CgiHead::kNoLength && !exchange_.is_head()) body_left_ = announced;
    if (buffers_response()) return relay(within_length(gathered), kNotEnded);
    if (!stream(within_length(gathered))) return Outcome::done;
    return std::nullopt; // the rest streams as it comes
}

bool Proxy::buffers_response() const {
    const CgiHead& cgi = backend_->cgi;
    for (std::size_t i = 0; i < cgi.field_count(); ++i) {
        const fastcgi::CgiField& field = cgi.fields()[i];
        if (http::equals_ignoring_case(field.name, "X-Accel-Buffering")) {
            if (http::equals_ignoring_case(field.value, "no")) return false;
        } else if (http::equals_ignoring_case(field.name, "Content-Type")) {
            constexpr std::string_view kEvents = "text/event-stream";
            if (field.value.size() >= kEvents.size() &&
                http::equals_ignoring_case(field.value.substr(0, kEvents.size()), kEvents))
                return false;
        }
    }
    return true;
}

Proxy::Outcome Proxy::relay(std::string_view first, std::size_t ended) {
    Loop& loop = *Loop::current();
    const std::uint32_t send_timeout = exchange_.send_timeout_ms();
    const std::uint32_t read_timeout = upstream_.options().read_timeout_ms;
    Spool spool(state_.buffers, state_.max_temp_file_size);
    // Try first, wait on EAGAIN: each flag goes down only when its socket
    // said so, and up when it signals again.
    bool client_ready = true;
    bool backend_ready = true;
    bool watching = true; // for a hang-up: until a pipelined request shows up
    std::uint64_t client_since = loop.now();
    std::uint64_t backend_since = loop.now();
    const auto cut = [&](const char* what) {
        if (what) fail(502, what);
        if (backend_) drop_backend();
        exchange_.close_after(); // the response is cut short: only closing tells
        return Outcome::done;
    };
    // What the client takes at once goes straight to it (a flush() from PHP
    // reaches a fast client without delay); the rest is spooled behind.
    const auto deliver = [&](std::string_view bytes) {
        if (spool.empty()) {
            client_since = loop.now(); // it owed nothing until now
            if (client_ready) {
                const ssize_t n = exchange_.write_some(bytes);
                if (n < 0) return false;
                bytes.remove_prefix(static_cast<std::size_t>(n));
                client_ready = bytes.empty();
            }
        }
        return bytes.empty() || spool.put(bytes) == 0;
    };
    if (!deliver(first)) return cut(nullptr);
    if (ended != kNotEnded) end_request(ended); // `first` is in the spool now
    for (;;) {
        while (client_ready && !spool.empty()) {
            const std::string_view front = spool.front();
            if (front.empty()) return cut("reading the response's temp file failed");
            const ssize_t n = exchange_.write_some(front);
            if (n < 0) return cut(nullptr);
            spool.take(static_cast<std::size_t>(n));
            client_ready = static_cast<std::size_t>(n) == front.size();
            if (n > 0) client_since = loop.now();
        }
        if (!backend_ && spool.empty()) {
            exchange_.finish();
            return Outcome::done;
        }
        const bool room = backend_ && spool.room() >= kMinRead;
        if (backend_ && !room) backend_since = loop.now(); // PHP waits for the client
        if (room && backend_ready) {
            Backend& b = *backend_;
            const std::size_t want = std::min<std::uint64_t>(Backend::kInSize, spool.room());
            const ssize_t n = receive_bytes(b.fd(), b.in, want);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) {
                backend_ready = false;
                continue;
            }
            if (n <= 0) return cut("the backend's response was cut short");
            backend_since = loop.now();
            const std::string_view input{b.in, static_cast<std::size_t>(n)};
            for (std::size_t pos = 0;;) {
                std::size_t used = 0;
                const RecordReader::Item item = b.reader.next(input.substr(pos), used);
                pos += used;
                if (item.kind == RecordReader::Kind::stdout_data) {
                    if (!deliver(within_length(item.data))) return cut(nullptr);
                } else if (item.kind == RecordReader::Kind::stderr_data) {
                    log_stderr(item.data);
                } else if (item.kind == RecordReader::Kind::end_request) {
                    end_request(input.size() - pos); // the worker is free: the spool feeds on
                    break;
                } else if (item.kind == RecordReader::Kind::error) {
                    return cut(item.error);
                } else {
                    break;
                }
            }
            continue;
        }
        // Wait for whichever can move: the backend (while there is room),
        // the client (while bytes wait for it), a hang-up, or the clock.
        std::optional<PollEvent> from_backend, to_client, hangup;
        Event* events[3];
        std::size_t count = 0;
        std::uint64_t deadline = ~std::uint64_t{0};
        if (room) {
            events[count++] = &from_backend.emplace(backend_->poll(), kReadable);
            deadline = backend_since + read_timeout;
        }
        if (!spool.empty()) {
            events[count++] = &to_client.emplace(client_, kWritable);
            deadline = std::min<std::uint64_t>(deadline, client_since + send_timeout);
        }
        if (watching) events[count++] = &hangup.emplace(client_, kReadable);
        const std::uint64_t now = loop.now();
        const AwaitResult woke =
            await_any(std::span<Event* const>(events, count),
                      static_cast<std::int64_t>(deadline > now ? deadline - now : 0));
        if (woke.index == AwaitResult::kTimeout) {
            if (!spool.empty() && loop.now() >= client_since + send_timeout)
                return cut("the client took nothing for send_timeout");
            if (room && loop.now() >= backend_since + read_timeout)
                return cut("the backend did not answer within read_timeout");
            continue;
        }
        if (!woke.fired()) return cut(nullptr); // cancelled: the server stops
        const Event* fired = events[woke.index];
        if (from_backend && fired == &*from_backend) {
            backend_ready = true;
        } else if (to_client && fired == &*to_client) {
            client_ready = true;
        } else if (io::peer_closed(client_.fd())) {
            return cut(nullptr); // the client left: everything goes
        } else {
            watching = false; // its next request came: a failed write tells from now on
        }
    }
}

std::string_view Proxy::within_length(std::string_view bytes) {
    if (bytes.size() <= body_left_) {
        if (body_left_ != ~std::uint64_t{0}) body_left_ -= bytes.size();
        return bytes;
    }
    if (!overlong_) {
        overlong_ = true;
        const std::string_view line = request_line();
        std::fprintf(stderr,
                     "weft: %s: the backend sent more than its Content-Length: the rest is "
                     "dropped (\"%.*s\")\n",
                     state_.name.c_str(), static_cast<int>(line.size()), line.data());
    }
    bytes = bytes.substr(0, static_cast<std::size_t>(body_left_));
    body_left_ = 0;
    return bytes;
}

bool Proxy::stream(std::string_view bytes) {
    if (bytes.empty()) return true;
    if (exchange_.write(bytes) == 0) return true;
    // The client is gone: the rest of the response has nowhere to go.
    drop_backend();
    return false;
}

Proxy::Outcome Proxy::end_request(std::size_t leftover) {
    if (!head_done_) {
        drop_backend();
        fail(502, "the backend ended the request without a response head");
        return Outcome::done;
    }
    // Bytes after END_REQUEST: the backend is confused; do not keep it.
    const bool keep =
        upstream_.keeps_connections() && leftover == 0 && !overlong_ && backend_->reader.ended();
    upstream_.release(backend_, keep);
    backend_ = nullptr;
    return Outcome::done;
}

} // namespace

// --- the handler --------------------------------------------------------------

fastcgi::UpstreamOptions upstream_options(const config::Upstream& upstream) {
    fastcgi::UpstreamOptions options;
    options.name = upstream.name;
    options.servers = upstream.servers;
    options.keepalive = upstream.keepalive;
    options.max_conns = upstream.max_conns;
    options.connect_timeout_ms = to_ms(upstream.connect_timeout);
    options.read_timeout_ms = to_ms(upstream.read_timeout);
    options.queue_timeout_ms = to_ms(upstream.queue_timeout);
    options.keepalive_timeout_ms = to_ms(upstream.keepalive_timeout);
    return options;
}

std::unique_ptr<FastcgiHandler> FastcgiHandler::create(const config::FastcgiHandler& config,
                                                       std::string_view site_root,
                                                       fastcgi::Upstream* upstream,
                                                       std::string& error,
                                                       std::string_view site_name) {
    auto state = std::make_unique<State>();
    state->name = "fastcgi " + config.prefix;
    state->server_name = site_name;
    std::string root(config.root.empty() ? site_root : std::string_view(config.root));
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    if (root.empty()) {
        error = state->name + ": no root: set one in the handler or its site";
        return nullptr;
    }
    const int fd = open_root(root.c_str());
    if (fd < 0) {
        error = state->name + ": cannot open the root " + root + ": " + std::strerror(-fd);
        return nullptr;
    }
    state->root_fd.reset(fd);
    state->root = root == "/" ? std::string() : root;

    ScriptRules rules;
    rules.extensions = config.extensions;
    rules.index = config.index;
    rules.static_files = config.static_files;
    rules.fallback = config.fallback.empty() ? std::string() : normalised_prefix(config.fallback);
    for (const std::string& prefix : config.deny) rules.deny.push_back(normalised_prefix(prefix));
    state->scripts = std::make_unique<ScriptResolver>(
        root, config.follow_symlinks ? Resolver::follow : probe_resolver(fd), std::move(rules));

    if (config.static_files) {
        config::FilesHandler files;
        files.prefix = config.prefix;
        files.root = root;
        // The static handler's index: the list's names that are no script
        // (the resolver runs the scripts), else index.html.
        files.index.clear();
        for (const std::string& name : config.index)
            if (!state->scripts->is_script_name(name)) files.index.push_back(name);
        if (files.index.empty()) files.index.push_back("index.html");
        files.deny = config.deny;
        files.follow_symlinks = config.follow_symlinks;
        state->files = FilesHandler::create(files, site_root, error);
        if (!state->files) return nullptr;
    }
    if (upstream) {
        state->upstream = upstream;
    } else {
        config::Upstream own;
        own.name = "pass";
        own.servers = config.pass;
        state->own_upstream = std::make_unique<fastcgi::Upstream>(upstream_options(own));
        state->upstream = state->own_upstream.get();
    }
    state->fixed_params = fixed_params();
    state->extra_params = extra_params(config.params);
    state->request_buffering = config.request_buffering;
    state->buffers = static_cast<std::size_t>(
        std::clamp<std::uint64_t>(config.buffers, kMinRead, std::uint64_t{1} << 30));
    state->max_temp_file_size = config.max_temp_file_size;
    return std::unique_ptr<FastcgiHandler>(new FastcgiHandler(std::move(state), config.prefix));
}

FastcgiHandler::FastcgiHandler(std::unique_ptr<State> state, std::string prefix)
    : http::Handler(std::move(prefix)), state_(std::move(state)) {
    state_->handler = this;
}

FastcgiHandler::~FastcgiHandler() = default;

void FastcgiHandler::serve(http::Exchange& exchange) const {
    const std::string_view path = exchange.path();
    char scratch[2048 + 256];
    const ScriptTarget target = state_->scripts->scratch_size(path.size()) <= sizeof scratch
                                    ? state_->scripts->resolve(path, scratch)
                                    : ScriptTarget{};
    switch (target.kind) {
    case ScriptTarget::Kind::forbidden:
        exchange.send_error(403);
        return;
    case ScriptTarget::Kind::not_found:
        exchange.send_error(404);
        return;
    case ScriptTarget::Kind::add_slash:
        redirect_to_directory(exchange, path);
        return;
    case ScriptTarget::Kind::static_file:
        if (state_->files)
            state_->files->serve(exchange);
        else
            exchange.send_error(404);
        return;
    case ScriptTarget::Kind::script:
        break;
    }
    // DOCUMENT_URI is the script and its PATH_INFO: the path itself, or the
    // index or front controller that runs for it (as nginx's $document_uri
    // after its internal redirect).
    Proxy(*state_, exchange).run(target, target.path_info.empty() ? target.script_name : path);
}

} // namespace weft::handlers
