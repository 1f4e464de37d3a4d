#include "http/exchange.hpp"

#include "http/body_reader.hpp"
#include "http/date.hpp"
#include "http/router.hpp"
#include "http/status.hpp"
#include "loop/loop.hpp"
#include "util/ascii.hpp"

#include <array>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

namespace weft::http {

namespace {

// Appends `text` at `out`; the caller has made room.
char* put(char* out, std::string_view text) {
    std::memcpy(out, text.data(), text.size());
    return out + text.size();
}

// Writes `text` so that it ends at `end`, which has room before it: where it
// starts.
char* put_before(char* end, std::string_view text) {
    std::memcpy(end - text.size(), text.data(), text.size());
    return end - text.size();
}

// The longest framing field: Content-Length with 20 digits.
constexpr std::size_t kMaxFramingSize = sizeof "Content-Length: \r\n" - 1 + 20;

// Two decimal digits for each number below 100.
constexpr auto kDigitPairs = [] {
    std::array<char, 200> pairs{};
    for (int i = 0; i < 100; ++i) {
        pairs[2 * i] = static_cast<char>('0' + i / 10);
        pairs[2 * i + 1] = static_cast<char>('0' + i % 10);
    }
    return pairs;
}();

// Decimal digits of n, two at a time, written backwards so that they end
// at `end`: where they start. No copy of a variable length (a call to
// memcpy cost as much as the digits), and std::to_chars costs twice as much
// for the short lengths a response has.
char* put_number_before(char* end, std::uint64_t n) {
    while (n >= 100) {
        end -= 2;
        std::memcpy(end, &kDigitPairs[n % 100 * 2], 2);
        n /= 100;
    }
    if (n >= 10) {
        end -= 2;
        std::memcpy(end, &kDigitPairs[n * 2], 2);
    } else {
        *--end = static_cast<char>('0' + n);
    }
    return end;
}

// The status line, Server and Date: how every head begins, the same for a
// status all through a second. So each thread builds it once a second per
// status, and a response copies one block.
struct HeadStart {
    // The longest: a 46-byte status line, 20 bytes of Server and "Date: ",
    // the date and its CRLF.
    static constexpr std::size_t kCapacity = 112;
    // Zeroed, an entry is built at its first use (no clock says 1970).
    std::time_t second;
    int status;
    std::uint32_t size;
    // The head start ends the block, so that copying the whole block puts it
    // right before whatever follows it.
    char text[kCapacity];

    [[gnu::noinline, gnu::cold]] void build(int for_status, std::time_t at) {
        char built[kCapacity];
        char scratch[40];
        char* out = put(built, status_line(for_status, scratch));
        out = put(out, "Server: weft\r\nDate: ");
        format_http_date(at, out);
        out = put(out + kHttpDateLength, "\r\n");
        size = static_cast<std::uint32_t>(out - built);
        std::memcpy(text + kCapacity - size, built, size);
        status = for_status;
        second = at;
    }
};

// Writes the head start so that it ends at `end`, which has
// HeadStart::kCapacity bytes of room before it: the whole block is copied (a
// few moves, not a call). Where the head starts. Inlined into its two
// callers: the call's prologue and epilogue cost 10 instructions a response.
[[gnu::always_inline]] inline char* put_head_start_before(char* end, int status) {
    thread_local constinit HeadStart cache[16]{}; // no guard: zeroed
    // CLOCK_REALTIME_COARSE is read from the vDSO without a syscall.
    timespec now{};
    clock_gettime(CLOCK_REALTIME_COARSE, &now);
    HeadStart& entry = cache[static_cast<unsigned>(status) % 16];
    if (entry.second != now.tv_sec || entry.status != status) [[unlikely]]
        entry.build(status, now.tv_sec);
    std::memcpy(end - HeadStart::kCapacity, entry.text, HeadStart::kCapacity);
    return end - entry.size;
}

// Whether text holds CR or LF. Eight bytes at a time: only a word with a
// byte below 0x0e is looked at closely (find_first_of would call memchr
// twice per byte).
bool has_line_break(std::string_view text) {
    constexpr std::uint64_t kOnes = 0x0101010101010101;
    constexpr std::uint64_t kHighs = 0x8080808080808080;
    const char* p = text.data();
    const char* const end = p + text.size();
    for (; end - p >= 8; p += 8) {
        std::uint64_t word;
        std::memcpy(&word, p, 8);
        if (((word - kOnes * 0x0e) & ~word & kHighs) == 0) continue;
        for (int i = 0; i < 8; ++i)
            if (p[i] == '\r' || p[i] == '\n') return true;
    }
    for (; p < end; ++p)
        if (*p == '\r' || *p == '\n') return true;
    return false;
}

// The length of the field line at `line`, of `left` bytes.
std::size_t line_length(const char* line, std::size_t left) {
    const auto* lf = static_cast<const char*>(std::memchr(line, '\n', left));
    return lf ? static_cast<std::size_t>(lf - line) + 1 : left;
}

// Whether the field line [line, line + length) is a field named `name`.
bool names_field(const char* line, std::size_t length, std::string_view name) {
    return length > name.size() && line[name.size()] == ':' &&
           ascii::equals_ignoring_case({line, name.size()}, name);
}

// Removes the lines of field `name` from `size` bytes of field lines
// ("Name: value\r\n" each) at `fields`; returns the size left.
std::size_t drop_field(char* fields, std::size_t size, std::string_view name) {
    std::size_t kept = 0;
    for (std::size_t at = 0; at < size;) {
        const char* line = fields + at;
        const std::size_t length = line_length(line, size - at);
        if (!names_field(line, length, name)) {
            if (kept != at) std::memmove(fields + kept, line, length);
            kept += length;
        }
        at += length;
    }
    return kept;
}

} // namespace

void Exchange::header(std::string_view name, std::string_view value) {
    // A decoded path or a backend's value must never split the head: such a
    // field fails the response (500) rather than go out.
    if (has_line_break(name) || has_line_break(value)) {
        overflow_ = true;
        return;
    }
    append_field(name, value);
}

void Exchange::header_checked(std::string_view name, std::string_view value) {
    assert(!has_line_break(name) && !has_line_break(value));
    assert(name.find('\0') == std::string_view::npos && value.find('\0') == std::string_view::npos);
    append_field(name, value);
}

void Exchange::append_field(std::string_view name, std::string_view value) {
    const std::size_t need = name.size() + value.size() + 4;
    if (head_size_ + need > kFieldCapacity) {
        overflow_ = true;
        return;
    }
    char* out = head_ + kLeadRoom + head_size_;
    out = put(out, name);
    out = put(out, ": ");
    out = put(out, value);
    out = put(out, "\r\n");
    head_size_ += need;
}

void Exchange::header_lines(std::string_view lines) {
    if (head_size_ + lines.size() > kFieldCapacity) {
        overflow_ = true;
        return;
    }
    std::memcpy(head_ + kLeadRoom + head_size_, lines.data(), lines.size());
    head_size_ += lines.size();
}

int Exchange::fail(int error) {
    // An error page's handler that fails before sending leaves the
    // exchange to the built-in page.
    if (serving_page_ && state_ == State::fresh) return error;
    if (state_ == State::page_pending) return -ECANCELED;
    if (state_ != State::handed_over) state_ = State::failed;
    close_after_ = true;
    return error;
}

int Exchange::send_head(std::uint64_t length, std::string_view body, bool more,
                        std::size_t* taken) {
    if (state_ != State::fresh) return fail(-EALREADY);
    if (overflow_) {
        std::fprintf(
            stderr,
            "weft: a response field held CR or LF, or the fields passed %zu bytes, for %.*s: 500\n",
            kFieldCapacity, static_cast<int>(path_.size()), path_.data());
        head_size_ = 0;
        overflow_ = false;
        return send_error(500);
    }
    if (rules_ && !apply_rules()) {
        std::fprintf(stderr,
                     "weft: the response's fields and the configured headers passed %zu bytes, "
                     "for %.*s: 500\n",
                     kHeadCapacity, static_cast<int>(path_.size()), path_.data());
        head_size_ = 0;
        rules_ = nullptr; // the 500 goes without them
        return send_error(500);
    }
    const bool no_body = status_has_no_body(status_);
    if (no_body) {
        length = 0;
        body = {};
    } else if (length == kUnknownLength && !is_head()) {
        // HTTP/1.0 has no chunks, nor has a stream to the close: the body
        // ends when the connection does.
        if (request_->minor >= 1 && !to_close_) {
            chunked_ = true;
        } else {
            close_after_ = true;
        }
    }
    if (!request_->keep_alive || body_.awaits_continue()) close_after_ = true;
    if (Loop* loop = Loop::current(); loop && loop->closing_connections()) close_after_ = true;

    // The lead goes right before the handler's fields, written backwards:
    // the framing, then the head start before it.
    static_assert(kLeadRoom >= HeadStart::kCapacity + kMaxFramingSize,
                  "the head start is copied whole, before the longest framing");
    char* lead = head_ + kLeadRoom;
    if (chunked_) {
        lead = put_before(lead, "Transfer-Encoding: chunked\r\n");
    } else if (!no_body && length != kUnknownLength) {
        lead = put_before(lead, "\r\n");
        lead = put_number_before(lead, length);
        lead = put_before(lead, "Content-Length: ");
    }
    char* const start = put_head_start_before(lead, status_);
    char* tail = fields_end();
    if (close_after_) {
        tail = put(tail, "Connection: close\r\n");
    } else if (request_->minor == 0) {
        tail = put(tail, "Connection: keep-alive\r\n");
    }
    tail = put(tail, "\r\n");

    iovec iov[2] = {{start, static_cast<std::size_t>(tail - start)},
                    {const_cast<char*>(body.data()), body.size()}};
    const bool with_body = !body.empty() && !is_head();
    state_ = State::streaming;
    length_ = length;
    if (taken) {
        const ssize_t n = socket_.send_now(iov, with_body ? 2 : 1);
        if (n < 0) return fail(static_cast<int>(n));
        const auto went = static_cast<std::size_t>(n);
        if (went < iov[0].iov_len) {
            // The head goes whole, waiting if it must (a full socket this
            // early is rare); the body waits for write_some().
            iov[0] = {start + went, iov[0].iov_len - went};
            const int result = socket_.send(iov, 1, true);
            if (result < 0) return fail(result);
            *taken = with_body ? 0 : body.size();
        } else {
            *taken = with_body ? went - iov[0].iov_len : body.size();
        }
        if (with_body) sent_ = *taken;
        return 0;
    }
    const int result = socket_.send(iov, with_body ? 2 : 1, more);
    if (result < 0) return fail(result);
    if (with_body) sent_ = body.size();
    return 0;
}

int Exchange::send(std::string_view body) {
    const int result = send_head(body.size(), body, false);
    if (result == 0 && state_ == State::streaming) state_ = State::finished;
    return result;
}

ssize_t Exchange::send_some(std::string_view body) {
    std::size_t taken = 0;
    const int result = send_head(body.size(), body, false, &taken);
    if (result < 0) return result;
    if (state_ != State::streaming) return static_cast<ssize_t>(body.size()); // an error page
    if (taken == body.size() || is_head() || status_has_no_body(status_)) {
        state_ = State::finished;
        return static_cast<ssize_t>(body.size());
    }
    return static_cast<ssize_t>(taken);
}

int Exchange::send_file(int fd, off_t offset, std::uint64_t length) {
    const bool body = length && !is_head() && !status_has_no_body(status_);
    int result = send_head(length, {}, body);
    if (result < 0 || state_ != State::streaming) return result;
    if (body) {
        result = socket_.send_file(fd, offset, length, sent_);
        if (result < 0) return fail(result);
    }
    state_ = State::finished;
    return 0;
}

bool Exchange::apply_rules() {
    const ResponseRules& rules = *rules_;
    if (serving_page_) {
        // An error page is not the resource its handler knows: no
        // validators a cache or a later request could take for it.
        status_ = pending_page_->status;
        for (std::string_view name : {"last-modified", "etag", "accept-ranges"})
            head_size_ = drop_field(head_ + kLeadRoom, head_size_, name);
    }
    char* const fields = head_ + kLeadRoom;
    const bool caches = !rules.cache_control_line.empty() && status_ < 400;
    // A Cache-Control or an Expires of the handler's own (PHP's) says how
    // long the response keeps: the rules add neither, nor a second Expires.
    bool own_freshness = false;
    if (caches || !rules.drops.empty()) {
        // One pass over the handler's fields: the rules' names go, and
        // whether a Cache-Control or Expires of its own stays is noted.
        std::size_t kept = 0;
        for (std::size_t at = 0; at < head_size_;) {
            char* const line = fields + at;
            const std::size_t length = line_length(line, head_size_ - at);
            at += length;
            bool dropped = false;
            for (const std::string& name : rules.drops)
                if ((dropped = names_field(line, length, name))) break;
            if (dropped) continue;
            own_freshness = own_freshness || names_field(line, length, "cache-control") ||
                            names_field(line, length, "expires");
            if (fields + kept != line) std::memmove(fields + kept, line, length);
            kept += length;
        }
        head_size_ = kept;
    }
    const bool adds_cache = caches && !own_freshness;
    const std::size_t need =
        rules.lines.size() + (adds_cache
                                  ? rules.cache_control_line.size() +
                                        (rules.expires >= 0 ? ResponseRules::kExpiresLineSize : 0)
                                  : 0);
    if (head_size_ + need > kHeadCapacity) return false;
    char* out = fields + head_size_;
    if (adds_cache) {
        out = put(out, rules.cache_control_line);
        if (rules.expires >= 0) {
            out = put(out, "Expires: ");
            out = put(out, http_date_after(rules.expires));
            out = put(out, "\r\n");
        }
    }
    out = put(out, rules.lines);
    head_size_ = static_cast<std::size_t>(out - fields);
    return true;
}

void Exchange::serve_pending_page() {
    const ErrorPageTarget& page = *pending_page_;
    const int status = page.status;
    state_ = State::fresh;
    if (abandoned_) return;
    const Handler* handler = router_.route(request_->host, page.route);
    if (handler) {
        // The page as an internal GET (HEAD stays HEAD) of its path: nothing
        // of the request that would change what it answers or read the
        // body. On the heap: an error's path.
        auto internal = std::make_unique<Request>(*request_);
        const bool head = is_head();
        internal->method = head ? Method::head : Method::get;
        internal->head = {}; // not as sent
        internal->method_name = head ? "HEAD" : "GET";
        // The target stays the client's: what PHP gets as REQUEST_URI, as
        // nginx's $request_uri (an application's router names the page
        // that was not found from it).
        internal->path = page.route;
        internal->query = {};
        internal->path_normal = false;
        internal->content_length = 0;
        internal->chunked = false;
        internal->expect_continue = false;
        std::size_t kept = 0;
        for (std::size_t i = 0; i < request_->header_count; ++i) {
            const std::string_view name = request_->headers[i].name;
            bool skip = false;
            for (std::string_view dropped :
                 {"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since",
                  "If-Unmodified-Since", "Content-Length", "Content-Type", "Transfer-Encoding",
                  "Expect", "Upgrade"})
                skip = skip || ascii::equals_ignoring_case(name, dropped);
            if (!skip) internal->headers[kept++] = request_->headers[i];
        }
        internal->header_count = kept;

        const Request* const original = request_;
        const std::string_view original_path = path_;
        const std::size_t fields = head_size_;
        request_ = internal.get();
        path_ = page.route;
        serving_page_ = true;
        handler->serve(*this);
        serving_page_ = false;
        request_ = original;
        path_ = original_path;
        if (state_ != State::fresh || abandoned_) return;
        // Nothing went: the built-in page, with the fields the handler set
        // before the error (not the page's).
        head_size_ = std::min(head_size_, fields);
        overflow_ = false;
    }
    send_error(status); // page_chosen_: not this page again
}

int Exchange::send_error(int status, std::string_view detail) {
    if (state_ != State::fresh) return fail(-EALREADY);
    // The error page's handler's own error: the built-in page follows.
    if (serving_page_) return -ECANCELED;
    status_ = status;
    char body[512];
    const std::string_view text = status_text(status);
    const int n =
        std::snprintf(body, sizeof body, "%d %.*s\n%.*s%s", status, static_cast<int>(text.size()),
                      text.data(), static_cast<int>(std::min<std::size_t>(detail.size(), 400)),
                      detail.data(), detail.empty() ? "" : "\n");
    // The page replaces whatever body the handler meant to send: the fields
    // that described that body go, the others (Allow for a 405) stay.
    head_size_ = drop_field(head_ + kLeadRoom, head_size_, "Content-Type");
    head_size_ = drop_field(head_ + kLeadRoom, head_size_, "Content-Encoding");
    if (rules_ && !page_chosen_) {
        if (const ErrorPageTarget* page = rules_->error_page(status)) {
            if (page->from_file) {
                header("Content-Type", page->content_type);
                return send(*page->body);
            }
            pending_page_ = page;
            page_chosen_ = true;
            state_ = State::page_pending;
            return 0;
        }
    }
    header("Content-Type", "text/plain; charset=utf-8");
    return send({body, static_cast<std::size_t>(n)});
}

int Exchange::begin(std::uint64_t length) {
    return send_head(length, {}, length != 0 && !is_head());
}

int Exchange::write(std::string_view bytes) {
    if (state_ != State::streaming) return state_ == State::failed ? -EPIPE : fail(-EINVAL);
    if (bytes.empty() || is_head() || status_has_no_body(status_)) return 0;
    if (in_chunk_ || owed_at_ != owed_size_) return fail(-EINVAL); // write_some's to finish
    if (chunked_) {
        char size_line[24];
        char* p = std::to_chars(size_line, size_line + 16, bytes.size(), 16).ptr;
        p = put(p, "\r\n");
        iovec iov[3] = {{size_line, static_cast<std::size_t>(p - size_line)},
                        {const_cast<char*>(bytes.data()), bytes.size()},
                        {const_cast<char*>("\r\n"), 2}};
        const int result = socket_.send(iov, 3, true);
        if (result < 0) return fail(result);
    } else {
        if (length_ != kUnknownLength && bytes.size() > length_ - sent_) return fail(-EINVAL);
        iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
        const bool more = length_ == kUnknownLength || sent_ + bytes.size() < length_;
        const int result = socket_.send(&iov, 1, more);
        if (result < 0) return fail(result);
    }
    sent_ += bytes.size();
    return 0;
}

ssize_t Exchange::write_some(std::string_view bytes) {
    if (state_ != State::streaming) return state_ == State::failed ? -EPIPE : fail(-EINVAL);
    if (bytes.empty()) return 0;
    if (is_head() || status_has_no_body(status_)) return static_cast<ssize_t>(bytes.size());
    if (!chunked_ && length_ != kUnknownLength && bytes.size() > length_ - sent_)
        return fail(-EINVAL);
    socket_.flush(); // what waits corked goes out with these
    // Each round sends one chunk's worth (or all, unchunked) until the
    // socket is full: a chunk finished leaves the rest for a new one.
    std::size_t done = 0;
    bool full = false;
    while (done < bytes.size() && !full) {
        const ssize_t n = write_now(bytes.substr(done), full);
        if (n < 0) return n;
        done += static_cast<std::size_t>(n);
    }
    return static_cast<ssize_t>(done);
}

ssize_t Exchange::write_now(std::string_view bytes, bool& full) {
    if (chunked_ && !in_chunk_) {
        // A chunk of all of them: its size line joins what is owed.
        const std::size_t owed = owed_size_ - owed_at_;
        std::memmove(owed_, owed_ + owed_at_, owed);
        char* p = std::to_chars(owed_ + owed, owed_ + owed + 16, bytes.size(), 16).ptr;
        p = put(p, "\r\n");
        owed_at_ = 0;
        owed_size_ = static_cast<std::uint8_t>(p - owed_);
        chunk_left_ = bytes.size();
        in_chunk_ = true;
    }
    std::size_t owed = owed_size_ - owed_at_;
    std::size_t data = chunked_ ? std::min<std::uint64_t>(chunk_left_, bytes.size()) : bytes.size();
    const bool closes = chunked_ && data == chunk_left_;
    std::size_t trailer = closes ? 2 : 0;
    std::size_t taken = 0;
    while (owed + data + trailer) {
        iovec iov[3];
        int count = 0;
        if (owed) iov[count++] = {owed_ + owed_size_ - owed, owed};
        if (data) iov[count++] = {const_cast<char*>(bytes.data()) + taken, data};
        if (trailer) iov[count++] = {const_cast<char*>("\r\n") + 2 - trailer, trailer};
        const ssize_t n = socket_.send_now(iov, count); // 0: the socket is full
        if (n < 0) return fail(static_cast<int>(n));
        if (n == 0) {
            full = true;
            break;
        }
        auto sent = static_cast<std::size_t>(n);
        const std::size_t from_owed = std::min(sent, owed);
        owed -= from_owed;
        sent -= from_owed;
        const std::size_t from_data = std::min(sent, data);
        data -= from_data;
        taken += from_data;
        trailer -= sent - from_data;
    }
    owed_at_ = static_cast<std::uint8_t>(owed_size_ - owed);
    if (chunked_) {
        chunk_left_ -= taken;
        if (chunk_left_ == 0) {
            // The chunk's data went: its CRLF, or what is left of it, is owed.
            in_chunk_ = false;
            const std::size_t rest = closes ? trailer : 2;
            std::memcpy(owed_, &"\r\n"[2 - rest], rest);
            owed_at_ = 0;
            owed_size_ = static_cast<std::uint8_t>(rest);
        }
    }
    sent_ += taken;
    return static_cast<ssize_t>(taken);
}

int Exchange::write_file(int fd, off_t offset, std::uint64_t length) {
    if (state_ != State::streaming) return state_ == State::failed ? -EPIPE : fail(-EINVAL);
    if (length == 0 || is_head() || status_has_no_body(status_)) return 0;
    if (chunked_) {
        char size_line[24];
        char* p = std::to_chars(size_line, size_line + 16, length, 16).ptr;
        p = put(p, "\r\n");
        iovec iov{size_line, static_cast<std::size_t>(p - size_line)};
        int result = socket_.send(&iov, 1, true);
        if (result == 0) result = socket_.send_file(fd, offset, length, sent_);
        iovec end{const_cast<char*>("\r\n"), 2};
        if (result == 0) result = socket_.send(&end, 1, true);
        if (result < 0) return fail(result);
    } else {
        if (length_ != kUnknownLength && length > length_ - sent_) return fail(-EINVAL);
        const int result = socket_.send_file(fd, offset, length, sent_);
        if (result < 0) return fail(result);
    }
    return 0;
}

int Exchange::finish() {
    if (state_ == State::finished) return 0;
    if (state_ != State::streaming) return state_ == State::failed ? -EPIPE : fail(-EINVAL);
    if (chunked_) {
        if (in_chunk_) return fail(-EPIPE); // a chunk cut short: only closing tells
        iovec iov[2] = {{owed_ + owed_at_, static_cast<std::size_t>(owed_size_ - owed_at_)},
                        {const_cast<char*>("0\r\n\r\n"), 5}};
        const int result = socket_.send(iov, 2);
        if (result < 0) return fail(result);
    } else if (!is_head() && !status_has_no_body(status_) && length_ != kUnknownLength &&
               sent_ != length_) {
        return fail(-EPIPE); // fewer bytes than announced: only closing tells the client
    } else if (length_ == kUnknownLength) {
        socket_.flush(); // a body that ends with the connection
    }
    state_ = State::finished;
    return 0;
}

ssize_t Exchange::read_body(void* buffer, std::size_t n) {
    if (serving_page_) return 0; // an error page's request has no body
    return body_.read(buffer, n, responded());
}

bool Exchange::in_pipeline() const {
    return request_->pipelined || body_.next_request_buffered();
}

int Exchange::switch_protocols(std::string_view protocol, HandOver& out) {
    if (state_ != State::fresh) return -EALREADY;
    if (serving_page_) return -EPERM;         // an error page is no hand-over
    if (request_->minor == 0) return -EPROTO; // HTTP/1.0 has no Upgrade (RFC 9110 §7.8)
    // Its bytes would be taken for the new protocol's.
    if (!body_.done() || body_.error()) return -EBUSY;
    header("Upgrade", protocol);
    if (overflow_) {
        send_head(0, {}, false); // the 500
        return -EMSGSIZE;
    }
    status_ = 101;
    char* const start = put_head_start_before(head_ + kLeadRoom, status_);
    char* const tail = put(fields_end(), "Connection: upgrade\r\n\r\n");
    // The handler's bytes go out as it sends them; this send, not corked,
    // pushes out whatever earlier answers left corked.
    socket_.set_pipelined(false);
    iovec iov{start, static_cast<std::size_t>(tail - start)};
    int result = socket_.send(&iov, 1);
    // The handler may write by syscalls (a detached session does): the head
    // goes before, not beside, them.
    if (result == 0) result = socket_.settle();
    if (result < 0) return fail(result);
    state_ = State::handed_over;
    detached_ = nullptr;
    close_after_ = true;
    out = {&socket_, body_.take_unread()};
    return 0;
}

int Exchange::stream_to_close(HandOver& out) {
    if (state_ != State::fresh) return -EALREADY;
    if (serving_page_) return -EPERM;
    if (request_->method != Method::get || status_has_no_body(status_)) return -EPROTO;
    if (!body_.done() || body_.error()) return -EBUSY;
    to_close_ = true;
    close_after_ = true;
    socket_.set_pipelined(false); // the head goes out now, not corked
    const int result = send_head(kUnknownLength, {}, false);
    if (result < 0) return result;
    if (state_ != State::streaming) return -EMSGSIZE;           // a 500 went instead
    if (const int error = socket_.settle()) return fail(error); // as in switch_protocols
    state_ = State::handed_over;
    detached_ = nullptr;
    out = {&socket_, body_.take_unread()};
    return 0;
}

int Exchange::detach(Detached* session) {
    if (state_ != State::handed_over || detached_) {
        delete session;
        return -EPROTO;
    }
    detached_ = session;
    return 0;
}

void Exchange::flush() {
    socket_.flush();
}

} // namespace weft::http
