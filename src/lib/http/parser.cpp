#include "http/parser.hpp"

#include "util/ascii.hpp"
#include "util/byte_scan.hpp"
#include "util/words.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace weft::http {

namespace {

using namespace byte_scan;
using ascii::is_digit;
using ascii::is_whitespace;

// A request-target's bytes are VCHAR only (no SP, controls, DEL or obs-text).
struct NotTarget {
    [[gnu::always_inline]] unsigned operator()(Block b) const {
        return ~bits(within(b, 0x21, 0x7e)) & kAll;
    }
};
struct NotTargetOrQuery {
    [[gnu::always_inline]] unsigned operator()(Block b) const {
        return (~bits(within(b, 0x21, 0x7e)) & kAll) | bits(equal(b, '?'));
    }
};

// A Host byte that needs the full check: not a letter, digit, '-', '.' or
// ':' (in '-'..':' only '/' is none of them).
struct NotPlainHost {
    [[gnu::always_inline]] unsigned operator()(Block b) const {
        return (~bits(letter(b) | within(b, '-', ':')) & kAll) | bits(equal(b, '/'));
    }
};

// The path of an origin-form target, from p (its first byte) to stop (the
// request line's end): where it ends, at its first byte that is not VCHAR or
// is '?'; and whether it is its own normal form (http/path.hpp), decided in
// the same pass: no '%' to decode, no slash followed by a slash or a dot (an
// empty, "." or ".." segment). A dot after a slash that starts another
// segment (".well-known") is a false alarm: normalize_path() decides it.
struct PathScan {
    std::size_t end;
    bool normal;
};

// The masks of one Block of a path; `slash_before` is 1 when the byte before
// the Block is a slash.
struct PathBits {
    unsigned end;  // bytes that end the path
    unsigned odd;  // bytes that may need normalize_path
    unsigned last; // 1 when the block's last byte is a slash
};
[[gnu::always_inline]] inline PathBits path_bits(Block b, unsigned slash_before) {
    const unsigned slash = bits(equal(b, '/'));
    const unsigned after_slash = (slash << 1 | slash_before) & kAll;
    return {NotTargetOrQuery{}(b),
            bits(equal(b, '%')) | (after_slash & (slash | bits(equal(b, '.')))), slash >> 15};
}

// The odd bytes before the first end byte, or all of them when none ends it.
[[gnu::always_inline]] inline bool none_before_end(const PathBits& m) {
    return (m.odd & ((m.end & (0u - m.end)) - 1)) == 0; // end 0: every bit stays
}

[[gnu::always_inline]] inline PathScan scan_path(const char* bytes, std::size_t p,
                                                 std::size_t stop) {
    // The byte before the path is the SP after the method: no slash.
    unsigned slash_before = 0;
    for (; stop - p >= 16; p += 16) {
        const PathBits m = path_bits(load_block(bytes + p), slash_before);
        if (m.end != 0) return {p + std::countr_zero(m.end), none_before_end(m)};
        if (m.odd != 0) return {find(bytes, p + 16, stop, NotTargetOrQuery{}), false};
        slash_before = m.last;
    }
    if (p == stop) return {stop, true};
    // The last bytes: as find() does, the Block that ends at stop, shifted
    // past the bytes before p (the byte just before p, in it, sets the
    // after-slash bit of p's); else a copy into a Block of zeros, whose
    // padding, a control, ends the path.
    const std::size_t shift = 16 - (stop - p);
    PathBits m;
    if (stop >= 16) {
        m = path_bits(load_block(bytes + stop - 16), 0);
        m.end >>= shift;
        m.odd >>= shift;
    } else {
        Block block{};
        std::memcpy(&block, bytes + p, stop - p);
        m = path_bits(block, slash_before);
        m.end &= (1u << (stop - p)) - 1;
    }
    return {m.end != 0 ? p + std::countr_zero(m.end) : stop, none_before_end(m)};
}

// find() of a control or DEL, 32 bytes a step while they last: field values
// are most of a head.
[[gnu::always_inline]] inline std::size_t find_control(const char* bytes, std::size_t p,
                                                       std::size_t stop) {
    for (; stop - p >= 32; p += 32) {
        const Block first = control(load_block(bytes + p));
        const Block second = control(load_block(bytes + p + 16));
        if (bits(first | second) != 0) // __builtin_ctz: the mask is not 0
            return p + static_cast<unsigned>(__builtin_ctz(bits(first) | bits(second) << 16));
    }
    return find(bytes, p, stop, ControlBits{});
}

// --- Byte sets for the rare bytes the masks leave to them --------------------

// Host and authority (RFC 3986 §3.2.2 with the port): unreserved, sub-delims,
// pct-encoded, ':' and an IP-literal's brackets. No '@': userinfo is an error
// (RFC 9110 §4.2.4).
constexpr ascii::ByteSet kHost = ascii::ByteSet::alphanumeric_and("-._~!$&'()*+,;=:[]%");

// --- Words -------------------------------------------------------------------

using words::load32;
using words::load64;

// `text` equals `lower` (lower-case letters, digits and '-') ignoring ASCII
// case, a word at a time. `text` is (part of) a field name or value, so holds
// no control but HTAB, and then OR 0x20 maps onto `lower`'s bytes only the
// same letters in either case and the same digits and '-': exact.
[[gnu::always_inline]] inline bool is(std::string_view text, std::string_view lower) {
    const std::size_t n = lower.size();
    if (text.size() != n) return false;
    const char* const a = text.data();
    const char* const b = lower.data();
    if (n >= 8) {
        constexpr std::uint64_t kCase = 0x2020202020202020;
        for (std::size_t i = 0; i + 8 < n; i += 8)
            if ((load64(a + i) | kCase) != load64(b + i)) return false;
        return (load64(a + n - 8) | kCase) == load64(b + n - 8); // overlaps the last word
    }
    if (n >= 4) {
        constexpr std::uint32_t kCase = 0x20202020;
        return (load32(a) | kCase) == load32(b) && (load32(a + n - 4) | kCase) == load32(b + n - 4);
    }
    for (std::size_t i = 0; i < n; ++i)
        if ((a[i] | 0x20) != b[i]) return false;
    return true;
}

// is() of the first lower.size() bytes of `text`, a request-target (VCHAR
// only). Not ascii::starts_with_ignoring_case: that call, in the cold branch
// the scan inlines, cost every request 4 instructions (callgrind, hello).
bool starts_with(std::string_view text, std::string_view lower) {
    return text.size() >= lower.size() && is(text.substr(0, lower.size()), lower);
}

// Method names are case-sensitive (RFC 9110 §9.1): "get" is `other`.
Method method_of(std::string_view name) {
    switch (name.size()) {
    case 3:
        return name == "GET" ? Method::get : name == "PUT" ? Method::put : Method::other;
    case 4:
        return name == "HEAD" ? Method::head : name == "POST" ? Method::post : Method::other;
    case 5:
        return name == "PATCH" ? Method::patch : name == "TRACE" ? Method::trace : Method::other;
    case 6:
        return name == "DELETE" ? Method::delete_ : Method::other;
    case 7:
        return name == "OPTIONS"   ? Method::options
               : name == "CONNECT" ? Method::connect
                                   : Method::other;
    default:
        return Method::other;
    }
}

// 1*DIGIT into a uint64; false on anything else, including overflow.
bool parse_length(std::string_view text, std::uint64_t& out) {
    if (text.empty()) return false;
    std::uint64_t value = 0;
    for (char c : text) {
        if (!is_digit(c)) return false;
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return false;
        value = value * 10 + digit;
    }
    out = value;
    return true;
}

// authority-form (CONNECT): host ":" port, the port 1*DIGIT.
bool valid_authority_form(std::string_view target) {
    const std::size_t colon = target.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == target.size()) return false;
    const std::string_view port = target.substr(colon + 1);
    return kHost.contains_all(target.substr(0, colon)) &&
           std::all_of(port.begin(), port.end(), is_digit);
}

} // namespace

ParseStatus RequestParser::fail(int status, std::string_view reason) {
    error_status_ = status;
    error_reason_ = reason;
    return ParseStatus::error;
}

bool RequestParser::refuse(int status, std::string_view reason) {
    fail(status, reason);
    return false;
}

void RequestParser::reset() {
    scanned_ = line_start_ = line_end_ = head_size_ = fields_ = 0;
    error_status_ = 0;
    error_reason_ = {};
    host_ = {};
    content_length_ = 0;
    seen_host_ = seen_length_ = chunked_ = false;
    expect_continue_ = close_asked_ = keep_alive_asked_ = false;
}

ParseStatus RequestParser::parse(std::string_view data, Request& request) {
    if (error_status_ != 0) return ParseStatus::error;
    // Done before: the fields are in the Request of that call, not
    // necessarily this one, so the head is parsed again.
    if (head_size_ != 0) reset();
    return scan(data, request);
}

// Which field a valid field name is: by its length, then one comparison.
[[gnu::always_inline]] inline RequestParser::Known RequestParser::known(std::string_view name) {
    switch (name.size()) {
    case 4:
        return is(name, "host") ? Known::host : Known::other;
    case 6:
        return is(name, "expect") ? Known::expect : Known::other;
    case 10:
        return is(name, "connection") ? Known::connection : Known::other;
    case 14:
        return is(name, "content-length") ? Known::content_length : Known::other;
    case 17:
        return is(name, "transfer-encoding") ? Known::transfer_encoding : Known::other;
    default:
        return Known::other;
    }
}

// field-name ":" OWS field-value OWS in [line_start_, cr), which holds no
// control but HTAB: stored as the next header, then applied.
[[gnu::always_inline]] inline bool RequestParser::field_line(const char* bytes, std::size_t cr,
                                                             Request& request) {
    const std::size_t start = line_start_;
    std::size_t colon = find(bytes, start, cr, NotNameBits{});
    if (bytes[colon] != ':' || colon == start || fields_ == kMaxHeaders) {
        colon = odd_name(bytes, cr, colon);
        if (colon == 0) return false;
    }
    // OWS: nearly always one SP before the value and none after it.
    std::size_t value = colon + 1 + (bytes[colon + 1] == ' ');
    while (is_whitespace(bytes[value])) ++value; // the CR stops it at the latest
    std::size_t end = cr;
    while (end > value && is_whitespace(bytes[end - 1])) --end;
    const std::string_view name(bytes + start, colon - start);
    const std::string_view text(bytes + value, end - value);
    request.headers[fields_++] = {name, text};
    // Only the names known() knows have these lengths.
    constexpr std::uint32_t kLengths = 1u << 4 | 1u << 6 | 1u << 10 | 1u << 14 | 1u << 17;
    if (name.size() >= 32 || (kLengths >> name.size() & 1) == 0) return true;
    const Known which = known(name);
    if (which == Known::host) { // in every request: inline
        if (seen_host_) return refuse(400, "repeated Host");
        if (find(bytes, value, end, NotPlainHost{}) != end && !kHost.contains_all(text))
            return refuse(400, "malformed Host");
        seen_host_ = true;
        host_ = text;
        return true;
    }
    return which == Known::other || field(which, text, request.minor);
}

// method SP request-target SP HTTP-version in [start, end), exactly one SP
// between parts.
[[gnu::always_inline]] inline bool RequestParser::parse_request_line(const char* bytes,
                                                                     std::size_t start,
                                                                     std::size_t end,
                                                                     Request& request) {
    std::size_t i = start;
    if (end - start >= 4 && load32(bytes + start) == load32("GET ")) {
        i += 3; // the usual method, known at one compare
        request.method = Method::get;
    } else {
        while (i < end && ascii::is_tchar(bytes[i])) ++i;
        if (i == start || i == end || bytes[i] != ' ') return refuse(400, "malformed method");
        request.method = method_of({bytes + start, i - start});
    }
    request.method_name = {bytes + start, i - start};

    // The target ends at the first byte that is not VCHAR, which must be the
    // SP before the version; its first '?' is noted on the way, and whether
    // an origin-form path needs normalising.
    const std::size_t target_start = ++i;
    std::size_t query = 0; // the first '?', if any (not 0: the method is before it)
    const PathScan path = scan_path(bytes, i, end);
    i = path.end;
    if (i < end && bytes[i] == '?') {
        query = i;
        i = find(bytes, i + 1, end, NotTarget{});
    }
    if (i == target_start) return refuse(400, "missing request-target");
    if (i == end) return refuse(400, "missing HTTP version");
    if (bytes[i] != ' ') return refuse(400, "invalid character in request-target");
    request.target = {bytes + target_start, i - target_start};

    const std::string_view version(bytes + i + 1, end - i - 1);
    if (version.size() == 8 && load64(version.data()) == load64("HTTP/1.1")) {
        request.minor = 1;
    } else if (version.size() == 8 && load64(version.data()) == load64("HTTP/1.0")) {
        request.minor = 0;
    } else {
        if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !is_digit(version[5]) ||
            version[6] != '.' || !is_digit(version[7]))
            return refuse(400, "malformed HTTP version");
        return refuse(505, "HTTP version not supported");
    }

    // origin-form, the usual one (RFC 9112 §3.2.1): the path up to the first
    // '?', the query after it.
    request.host = {};
    request.path_normal = false;
    if (bytes[target_start] != '/' || request.method == Method::connect)
        return parse_other_target(request);
    request.path_normal = path.normal;
    if (query == 0) {
        request.path = {bytes + target_start, i - target_start};
        request.query = {};
    } else {
        request.path = {bytes + target_start, query - target_start};
        request.query = {bytes + query + 1, i - query - 1};
    }
    return true;
}

// Finds the end of each line, checking every byte once across calls, and
// parses each line as its CRLF arrives. Only a CRLF ends a line: a CR
// followed by anything else is an error here, so no later stage can disagree
// with a peer about where a line ends. Each limit is checked at the byte that
// breaks it, and each line is parsed whole, so the outcome never depends on
// how the input was split into calls.
ParseStatus RequestParser::scan(std::string_view data, Request& request) {
    const char* const bytes = data.data();
    const std::size_t size = data.size();
    const std::size_t stop = std::min(size, limits_.max_head);
    std::size_t p = scanned_;

    // The request line, after any empty lines (RFC 9112 §2.2).
    while (line_end_ == 0) {
        // Up to the byte that would make the request line one too long.
        const std::size_t line_stop = std::min(stop, line_start_ + limits_.max_request_line + 1);
        p = find_control(bytes, p, line_stop);
        if (p == line_stop) return more(p);
        const Next next = p + 1 < line_stop && bytes[p] == '\r' && bytes[p + 1] == '\n'
                              ? Next::line_end
                              : odd_byte(bytes, size, p);
        if (next == Next::skip) {
            ++p;
            continue;
        }
        if (next == Next::more) return more(p);
        if (next == Next::error) return ParseStatus::error;
        if (p != line_start_) {
            line_end_ = p;
            if (!parse_request_line(bytes, line_start_, p, request)) return ParseStatus::error;
        }
        p += 2;
        line_start_ = p;
    }

    // The field lines, up to the empty line. A CRLF found before `stop` is
    // the one way a line ends here (odd_byte() finds a CR before the limit
    // only at the end of the input). The empty line is looked for first: a
    // line found by the scan starts after p, so it is a field line.
    for (;;) {
        if (p == line_start_ && p + 1 < stop && bytes[p] == '\r' && bytes[p + 1] == '\n')
            return finish(bytes, p, request);
        p = find_control(bytes, p, stop);
        if (p + 1 < stop && bytes[p] == '\r' && bytes[p + 1] == '\n') {
            if (!field_line(bytes, p, request)) return ParseStatus::error;
            p += 2;
            line_start_ = p;
            continue;
        }
        if (p == stop) return more(p);
        const Next next = odd_byte(bytes, size, p);
        if (next == Next::skip) {
            ++p;
            continue;
        }
        return next == Next::more ? more(p) : ParseStatus::error;
    }
}

// The control or DEL at p, in the input of `size` bytes, is not the CR of a
// CRLF that the scan saw whole.
RequestParser::Next RequestParser::odd_byte(const char* bytes, std::size_t size, std::size_t p) {
    if (bytes[p] == '\t') return Next::skip;
    if (bytes[p] == '\n') return fail(400, "bare LF in the request head"), Next::error;
    if (bytes[p] != '\r') return fail(400, "control character in the request head"), Next::error;
    // This CR's LF would be byte max_head + 1 of the head, or later.
    if (p + 1 >= limits_.max_head) return fail(431, "request head too large"), Next::error;
    if (p + 1 == size) return Next::more; // the byte after the CR decides
    if (bytes[p + 1] != '\n') return fail(400, "CR without LF in the request head"), Next::error;
    return Next::line_end; // one that is just inside the request line's limit
}

// The input ends, or reaches a limit, at p without ending the head.
ParseStatus RequestParser::more(std::size_t p) {
    scanned_ = p;
    if (line_end_ == 0 && p - line_start_ > limits_.max_request_line)
        return fail(414, "request line too long");
    if (p >= limits_.max_head) return fail(431, "request head too large");
    return ParseStatus::incomplete;
}

// The empty line at cr ends the head: what needs every field is checked, and
// the Request gets the rest of what it holds.
ParseStatus RequestParser::finish(const char* bytes, std::size_t cr, Request& request) {
    if (request.minor == 1 && !seen_host_) return fail(400, "missing Host");
    if (chunked_ && seen_length_) return fail(400, "both Content-Length and Transfer-Encoding");
    scanned_ = head_size_ = cr + 2;
    const char* const start = request.method_name.data(); // the request line's
    request.head = {start, static_cast<std::size_t>(bytes + head_size_ - start)};
    if (request.host.data() == nullptr) request.host = host_; // no authority in the target
    // close wins; an HTTP/1.0 connection persists only when asked to.
    request.keep_alive = !close_asked_ && (request.minor == 1 || keep_alive_asked_);
    request.expect_continue = expect_continue_;
    request.chunked = chunked_;
    request.content_length = content_length_;
    request.header_count = fields_;
    return ParseStatus::done;
}

// The other forms of request.target (RFC 9112 §3.2.2-4), each only with the
// methods that use it. An authority in the target is the request's host.
bool RequestParser::parse_other_target(Request& request) {
    const std::string_view target = request.target;
    request.path = request.query = {};
    const bool connect = request.method == Method::connect;
    if (target == "*") {
        if (request.method != Method::options) return refuse(400, "'*' target without OPTIONS");
        request.path = target;
        return true;
    }
    if (connect) {
        if (!valid_authority_form(target)) return refuse(400, "malformed CONNECT target");
        request.host = target;
        return true;
    }
    std::size_t scheme = 0;
    if (starts_with(target, "http://"))
        scheme = 7;
    else if (starts_with(target, "https://"))
        scheme = 8;
    else
        return refuse(400, "malformed request-target");
    const std::size_t authority_end = std::min(target.find_first_of("/?", scheme), target.size());
    const std::string_view authority = target.substr(scheme, authority_end - scheme);
    if (authority.empty() || !kHost.contains_all(authority))
        return refuse(400, "malformed authority in request-target");
    request.host = authority;
    const std::string_view rest = target.substr(authority_end);
    const std::size_t q = rest.find('?');
    request.path = rest.substr(0, q);
    if (q != std::string_view::npos) request.query = rest.substr(q + 1);
    // An empty path is "/" (RFC 9110 §4.2.3); the view stays inside the
    // buffer by pointing at the second slash of the scheme's "//".
    if (request.path.empty()) request.path = target.substr(scheme - 1, 1);
    return true;
}

// The field line [line_start_, cr)'s name scan stopped at `stopped`, which is
// not a colon after a name, or the line is one too many. The colon, or 0
// after refuse().
std::size_t RequestParser::odd_name(const char* bytes, std::size_t cr, std::size_t stopped) {
    const std::size_t start = line_start_;
    if (is_whitespace(bytes[start])) return refuse(400, "obs-fold or whitespace before a field"), 0;
    if (fields_ == kMaxHeaders) return refuse(431, "too many header fields"), 0;
    std::size_t colon = stopped;
    while (colon < cr && ascii::is_tchar(bytes[colon])) ++colon;
    if (colon == cr || bytes[colon] != ':')
        return refuse(400, colon < cr && is_whitespace(bytes[colon])
                               ? "whitespace before a field's colon"
                               : "malformed header field"),
               0;
    if (colon == start) return refuse(400, "empty field name"), 0;
    return colon;
}

// Applies a field that frames or steers the request (of HTTP/1.minor).
bool RequestParser::field(Known which, std::string_view value, std::uint8_t minor) {
    switch (which) {
    case Known::expect:
        if (minor == 1 && is(value, "100-continue")) expect_continue_ = true;
        return true;
    case Known::connection: {
        // A list of options, nearly always one.
        if (is(value, "keep-alive")) {
            keep_alive_asked_ = true;
            return true;
        }
        std::string_view rest = value;
        while (!rest.empty()) {
            const std::size_t comma = std::min(rest.find(','), rest.size());
            const std::string_view option = ascii::trim_whitespace(rest.substr(0, comma));
            rest.remove_prefix(std::min(comma + 1, rest.size()));
            if (is(option, "close"))
                close_asked_ = true;
            else if (is(option, "keep-alive"))
                keep_alive_asked_ = true;
        }
        return true;
    }
    case Known::content_length:
        if (seen_length_) return refuse(400, "repeated Content-Length");
        if (!parse_length(value, content_length_)) return refuse(400, "malformed Content-Length");
        seen_length_ = true;
        return true;
    case Known::transfer_encoding:
        if (minor == 0) return refuse(400, "Transfer-Encoding in HTTP/1.0");
        // A second field makes a list ("chunked, chunked"): not just chunked.
        if (chunked_ || !is(value, "chunked")) return refuse(501, "unsupported transfer coding");
        chunked_ = true;
        return true;
    case Known::host: // in field_line()
    case Known::other:
        break;
    }
    return true;
}

} // namespace weft::http
