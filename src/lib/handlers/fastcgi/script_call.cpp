#include "handlers/fastcgi/script_call.hpp"

#include "event/waker.hpp"
#include "handlers/fastcgi/request_body.hpp"
#include "http/exchange.hpp"
#include "http/path.hpp"
#include "http/router.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"
#include "loop/ring.hpp"
#include "util/ascii.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace weft::handlers {

using fastcgi::AcquireError;
using fastcgi::Backend;
using fastcgi::CgiHead;
using fastcgi::RecordReader;
using fastcgi::RecordWriter;

namespace {

// Local redirects followed for one request before giving up (500).
constexpr int kMaxLocalRedirects = 8;

// Whether the loop saw the backend shut its side of a kept connection (PHP-FPM
// does after END_REQUEST once a child reaches pm.max_requests): the sticky
// bits of its fd's entry, so asking costs no syscall. The edge that brought
// it may have been taken with the last response's bytes, so no later wait
// would see it.
bool backend_closed(int fd) {
    return Loop::current()->table()[fd].ready & (kPeerClosed | kHungUp);
}

// Whether a field of the CGI head goes on to the client: framing is this
// server's, and X-Accel-* are instructions to it.
bool passes_on(fastcgi::FieldKind kind) {
    using fastcgi::FieldKind;
    return kind != FieldKind::content_length && kind != FieldKind::hop_by_hop &&
           kind != FieldKind::x_accel_buffering && kind != FieldKind::x_accel;
}

bool client_pipelined(const void* exchange) {
    return static_cast<const http::Exchange*>(exchange)->in_pipeline();
}

} // namespace

ScriptCall::ScriptCall(const FastcgiHandler::State& state, http::Exchange& exchange)
    : state_(state), upstream_(*state.upstream), exchange_(exchange), request_(exchange.request()),
      client_(*Loop::current(), exchange.client_fd()),
      client_watch_(client_, client_pipelined, &exchange),
      document_root_(state.scripts->document_root()) {}

ScriptCall::~ScriptCall() {
    if (backend_) drop_backend();
}

std::string ScriptCall::request_line() const {
    // Not a view from the method to the target's end: an error page's
    // internal request has them in different places.
    std::string line(request_.method_name);
    return line.append(" ").append(request_.target);
}

void ScriptCall::fail(int status, const char* what, int error) {
    const std::string line = request_line();
    std::fprintf(stderr, "weft: %s: %s%s%s (\"%.*s\")\n", state_.name.c_str(), what,
                 error ? ": " : "", error ? std::strerror(error) : "",
                 static_cast<int>(line.size()), line.data());
    if (!exchange_.responded()) exchange_.send_error(status);
}

void ScriptCall::log_stderr(std::string_view text) const {
    const std::string line = request_line();
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

int ScriptCall::wait_backend(std::uint8_t interest) {
    // Responses corked for pipelining go out before a wait on something else.
    exchange_.flush();
    return client_watch_.await(backend_->poll(), interest, upstream_.read_timeout_ms());
}

int ScriptCall::flush_to_backend(void* self, const char* bytes, std::size_t size) {
    ScriptCall& p = *static_cast<ScriptCall*>(self);
    const int fd = p.backend_->fd();
    Loop& loop = *Loop::current();
    if (Ring* ring = loop.byte_ring()) {
        // A send of ours still in the ring goes first: never two, never a
        // syscall beside one (the bytes would cross).
        while (ring->sending(fd))
            if (const int waited = p.wait_backend(kWritable)) return waited;
        // The request's last bytes (mostly all of it) go in the tick's
        // enter, on a connection this loop watches: closing it forgets the
        // fd, which makes the send's completion stale (ring.hpp). Its
        // failure shows as the answer's: the connection ended (a kept one is
        // retried).
        const FdEntry& entry = loop.table()[fd];
        const iovec iov{const_cast<char*>(bytes), size};
        if (p.last_flush_ && entry.kind == FdKind::watched && entry.loop == loop.index() &&
            ring->send(fd, &iov, 1))
            return 0;
    }
    while (size) {
        const ssize_t n = io::send_now(fd, bytes, size);
        if (n > 0) {
            bytes += n;
            size -= static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && n != -EAGAIN) return static_cast<int>(n);
        if (const int waited = p.wait_backend(kWritable)) return waited;
    }
    return 0;
}

void ScriptCall::run(const ScriptTarget& first, std::string_view document_uri) {
    // Before a backend is taken (request_body.hpp).
    Spool body(kBodyMemory, ~std::uint64_t{0});
    if (reads_body_first(request_, state_.request_buffering)) {
        const int error = read_body_whole(exchange_, body);
        if (error == -EIO) return fail(500, "the request body could not be spooled");
        if (error < 0) return; // the connection answers 413/408/400
        spool_ = &body;
    }
    endpoints_.look_up(client_.fd(), exchange_.forwarded_client());

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
        if (error != AcquireError::none) return fail_backend(backend_failure(error));
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

ScriptCall::Outcome ScriptCall::exchange_once(const ScriptTarget& script,
                                              std::string_view document_uri,
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

bool ScriptCall::send_request(const ScriptTarget& script, std::string_view document_uri,
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
    params.script_file = script.script_file;
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
    last_flush_ = true;
    const int error = writer.flush();
    last_flush_ = false;
    if (error == 0) return true;

    const bool retry = backend_->reused() && !body_read_ && error != -ETIMEDOUT &&
                       error != -ECONNABORTED && error != -ECANCELED;
    if (retry) return false; // the caller sees retry through backend_ still set
    drop_backend();
    fail_backend(backend_failure(BackendStep::send, error));
    return false;
}

ssize_t ScriptCall::receive() {
    Backend& b = *backend_;
    for (;;) {
        if (!drained_) {
            const ssize_t n = io::recv_now(b.fd(), b.in, Backend::kInSize);
            if (n >= 0) {
                // A short read emptied the socket: what comes next raises a
                // new edge, so the next call can wait without a read first.
                drained_ = static_cast<std::size_t>(n) < Backend::kInSize;
                return n;
            }
            if (n != -EAGAIN) return n;
        }
        drained_ = false;
        if (const int waited = wait_backend(kReadable)) return waited;
    }
}

void ScriptCall::drop_backend() {
    upstream_.release(backend_, false);
    backend_ = nullptr;
}

void ScriptCall::fail_backend(const BackendFailure& failure) {
    if (failure.status == 0) return exchange_.abandon(); // the client left: nobody to answer
    fail(failure.status, failure.what, failure.error);
}

ScriptCall::Outcome ScriptCall::read_response() {
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
            // A response begun is cut short: the client's connection closes.
            drop_backend();
            fail_backend(backend_failure(BackendStep::read, n));
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

bool ScriptCall::head_fits() const {
    const CgiHead& cgi = backend_->cgi;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < cgi.field_count(); ++i) {
        const fastcgi::CgiField& field = cgi.fields()[i];
        if (passes_on(field.kind)) bytes += field.name.size() + field.value.size() + 4;
    }
    return bytes <= http::Exchange::kFieldCapacity;
}

void ScriptCall::copy_head() {
    const CgiHead& cgi = backend_->cgi;
    exchange_.status(cgi.status());
    for (std::size_t i = 0; i < cgi.field_count(); ++i) {
        const fastcgi::CgiField& field = cgi.fields()[i];
        // The parser let no CR, LF or NUL through (cgi_head.hpp).
        if (passes_on(field.kind)) exchange_.header_checked(field.name, field.value);
    }
}

bool ScriptCall::start_response(std::uint64_t length) {
    copy_head();
    return exchange_.begin(length) == 0;
}

std::optional<ScriptCall::Outcome> ScriptCall::respond(std::string_view body_start,
                                                       std::string_view input, std::size_t pos) {
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

bool ScriptCall::buffers_response() const {
    const CgiHead& cgi = backend_->cgi;
    for (std::size_t i = 0; i < cgi.field_count(); ++i) {
        const fastcgi::CgiField& field = cgi.fields()[i];
        if (field.kind == fastcgi::FieldKind::x_accel_buffering) {
            if (ascii::equals_ignoring_case(field.value, "no")) return false;
        } else if (field.kind == fastcgi::FieldKind::content_type) {
            constexpr std::string_view kEvents = "text/event-stream";
            if (field.value.size() >= kEvents.size() &&
                ascii::equals_ignoring_case(field.value.substr(0, kEvents.size()), kEvents))
                return false;
        }
    }
    return true;
}

ScriptCall::Outcome ScriptCall::relay(std::string_view first, std::size_t ended) {
    Loop& loop = *Loop::current();
    const std::uint32_t send_timeout = exchange_.send_timeout_ms();
    const std::uint32_t read_timeout = upstream_.read_timeout_ms();
    Spool spool(state_.buffers, state_.max_temp_file_size);
    // Try first, wait on EAGAIN: each flag goes down only when its socket
    // said so, and up when it signals again.
    bool client_ready = true;
    bool backend_ready = true;
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
            const ssize_t n = io::recv_now(b.fd(), b.in, want);
            if (n == -EAGAIN) {
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
        std::optional<PollEvent> from_backend, to_client;
        std::uint64_t deadline = ~std::uint64_t{0};
        Waker waker(Waker::Mode::any, 3);
        if (room) {
            waker.resume_when(from_backend.emplace(backend_->poll(), kReadable));
            deadline = backend_since + read_timeout;
        }
        if (!spool.empty()) {
            waker.resume_when(to_client.emplace(client_, kWritable));
            deadline = std::min<std::uint64_t>(deadline, client_since + send_timeout);
        }
        client_watch_.join(waker);
        const std::uint64_t now = loop.now();
        const AwaitResult woke =
            waker.wait(static_cast<std::int64_t>(deadline > now ? deadline - now : 0));
        if (woke.index == AwaitResult::kTimeout) {
            if (!spool.empty() && loop.now() >= client_since + send_timeout)
                return cut("the client took nothing for send_timeout");
            if (room && loop.now() >= backend_since + read_timeout)
                return cut("the backend did not answer within read_timeout");
            continue;
        }
        const fastcgi::ClientWatch::Verdict verdict = client_watch_.verdict(woke);
        if (verdict == fastcgi::ClientWatch::Verdict::gone)
            return cut(nullptr); // the client left: everything goes
        if (verdict == fastcgi::ClientWatch::Verdict::watching) continue;
        if (!woke.fired()) return cut(nullptr); // cancelled: the server stops
        // The backend's event comes first when there is room.
        if (room && woke.index == 0) {
            backend_ready = true;
        } else {
            client_ready = true;
        }
    }
}

std::string_view ScriptCall::within_length(std::string_view bytes) {
    if (bytes.size() <= body_left_) {
        if (body_left_ != ~std::uint64_t{0}) body_left_ -= bytes.size();
        return bytes;
    }
    if (!overlong_) {
        overlong_ = true;
        const std::string line = request_line();
        std::fprintf(stderr,
                     "weft: %s: the backend sent more than its Content-Length: the rest is "
                     "dropped (\"%.*s\")\n",
                     state_.name.c_str(), static_cast<int>(line.size()), line.data());
    }
    bytes = bytes.substr(0, static_cast<std::size_t>(body_left_));
    body_left_ = 0;
    return bytes;
}

bool ScriptCall::stream(std::string_view bytes) {
    if (bytes.empty()) return true;
    if (exchange_.write(bytes) == 0) return true;
    // The client is gone: the rest of the response has nowhere to go.
    drop_backend();
    return false;
}

ScriptCall::Outcome ScriptCall::end_request(std::size_t leftover) {
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

} // namespace weft::handlers
