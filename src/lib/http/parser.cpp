#include "http/parser.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

namespace weft::http {

namespace {

using CharSet = std::array<bool, 256>;

constexpr bool in(const CharSet& set, char c) {
    return set[static_cast<unsigned char>(c)];
}

// tchar (RFC 9110 §5.6.2): method names, field names, tokens.
constexpr CharSet kToken = [] {
    CharSet set{};
    for (int c = '0'; c <= '9'; ++c) set[c] = true;
    for (int c = 'a'; c <= 'z'; ++c) set[c] = set[c - 32] = true;
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) set[static_cast<unsigned char>(c)] = true;
    return set;
}();

// What the scan steps over without a second look: everything a field value
// may hold (HTAB, SP, VCHAR, obs-text). CR, LF, the other controls and DEL
// stop it.
constexpr CharSet kPlain = [] {
    CharSet set{};
    set['\t'] = true;
    for (int c = 0x20; c < 0x7f; ++c) set[c] = true;
    for (int c = 0x80; c < 0x100; ++c) set[c] = true;
    return set;
}();

// A request-target's bytes: VCHAR only (no SP, controls, DEL or obs-text).
constexpr CharSet kTarget = [] {
    CharSet set{};
    for (int c = 0x21; c < 0x7f; ++c) set[c] = true;
    return set;
}();

// Host and authority (RFC 3986 §3.2.2 with the port): unreserved, sub-delims,
// pct-encoded, ':' and an IP-literal's brackets. No '@': userinfo is an error
// (RFC 9110 §4.2.4).
constexpr CharSet kHost = [] {
    CharSet set{};
    for (int c = '0'; c <= '9'; ++c) set[c] = true;
    for (int c = 'a'; c <= 'z'; ++c) set[c] = set[c - 32] = true;
    for (char c : std::string_view("-._~!$&'()*+,;=:[]%"))
        set[static_cast<unsigned char>(c)] = true;
    return set;
}();

// Eight bytes at a time, by the usual word tricks: each is exact about
// whether a word holds such a byte (a borrow can only mark bytes after a
// real one).
constexpr std::uint64_t kOnes = 0x0101010101010101;  // 0x01 in every byte
constexpr std::uint64_t kHighs = 0x8080808080808080; // 0x80 in every byte

// 0x80 in a byte marks it: nonzero when some byte is below n.
std::uint64_t bytes_below(std::uint64_t word, std::uint8_t n) {
    return (word - kOnes * n) & ~word & kHighs;
}

// Nonzero when some byte is c.
std::uint64_t bytes_equal(std::uint64_t word, char c) {
    return bytes_below(word ^ (kOnes * static_cast<std::uint8_t>(c)), 1);
}

// A byte below 0x20 or DEL: the word needs a look byte by byte (HTAB is the
// one such byte that is plain).
bool has_special(std::uint64_t word) {
    return (bytes_below(word, 0x20) | bytes_equal(word, 0x7f)) != 0;
}

std::uint64_t load64(const char* bytes) {
    std::uint64_t word;
    std::memcpy(&word, bytes, sizeof word);
    return word;
}

// The first byte at or after p, before stop, that is not plain; or stop.
std::size_t skip_plain(const char* bytes, std::size_t p, std::size_t stop) {
    while (p < stop) {
        while (stop - p >= 8 && !has_special(load64(bytes + p))) p += 8;
        const std::size_t end = std::min(stop, p + 8);
        while (p < end && in(kPlain, bytes[p])) ++p;
        if (p < end) break;
    }
    return p;
}

bool all_in(const CharSet& set, std::string_view text) {
    for (char c : text)
        if (!in(set, c)) return false;
    return true;
}

constexpr bool is_space(char c) {
    return c == ' ' || c == '\t';
}
constexpr bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

// equals_ignoring_case() against a lower-case literal, small enough to
// inline where every field name is compared.
bool is(std::string_view text, std::string_view lower) {
    if (text.size() != lower.size()) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c) != lower[i]) return false;
    }
    return true;
}

bool starts_with_ignoring_case(std::string_view text, std::string_view lower) {
    return text.size() >= lower.size() && is(text.substr(0, lower.size()), lower);
}

// The first CR at or after p; the scan has made sure there is one before end.
std::size_t find_cr(const char* bytes, std::size_t p, std::size_t end) {
    while (end - p >= 8 && bytes_equal(load64(bytes + p), '\r') == 0) p += 8;
    while (bytes[p] != '\r') ++p;
    return p;
}

// Method names are case-sensitive (RFC 9110 §9.1): "get" is `other`.
Method method_of(std::string_view name) {
    struct Known {
        std::string_view name;
        Method method;
    };
    static constexpr Known kKnown[] = {
        {"GET", Method::get},     {"HEAD", Method::head},      {"POST", Method::post},
        {"PUT", Method::put},     {"DELETE", Method::delete_}, {"OPTIONS", Method::options},
        {"PATCH", Method::patch}, {"TRACE", Method::trace},    {"CONNECT", Method::connect},
    };
    for (const Known& known : kKnown)
        if (known.name == name) return known.method;
    return Method::other;
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
    return all_in(kHost, target.substr(0, colon)) &&
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
    // Field by field: line_ is rewritten by the next request line.
    scanned_ = line_start_ = line_end_ = head_size_ = fields_ = 0;
    error_status_ = 0;
    error_reason_ = {};
}

ParseStatus RequestParser::parse(std::string_view data, Request& request) {
    if (error_status_ != 0) return ParseStatus::error;
    if (head_size_ == 0) {
        const ParseStatus status = scan(data);
        if (status != ParseStatus::done) return status;
    }
    return fill(data, request);
}

// Finds the end of the head, checking every byte once across calls. Only a
// CRLF ends a line: a CR followed by anything else is an error here, so no
// later stage can disagree with a peer about where a line ends. Each limit is
// checked at the byte that breaks it, so the outcome never depends on how the
// input was split into calls.
ParseStatus RequestParser::scan(std::string_view data) {
    const char* const bytes = data.data();
    const std::size_t size = data.size();
    std::size_t p = scanned_;
    for (;;) {
        std::size_t stop = std::min(size, limits_.max_head);
        // Up to the byte that would make the request line one too long.
        if (line_end_ == 0 && stop - line_start_ > limits_.max_request_line)
            stop = line_start_ + limits_.max_request_line + 1;
        p = skip_plain(bytes, p, stop);
        if (p >= stop) break;
        if (bytes[p] == '\n') return fail(400, "bare LF in the request head");
        if (bytes[p] != '\r') return fail(400, "control character in the request head");
        // This CR's LF would be byte max_head + 1 of the head, or later.
        if (p + 1 >= limits_.max_head) return fail(431, "request head too large");
        if (p + 1 == size) break; // the byte after the CR decides
        if (bytes[p + 1] != '\n') return fail(400, "CR without LF in the request head");
        const ParseStatus status = end_line(data, p);
        p += 2;
        line_start_ = p;
        if (status != ParseStatus::incomplete) {
            scanned_ = p;
            return status;
        }
    }
    scanned_ = p;
    if (line_end_ == 0 && p - line_start_ > limits_.max_request_line)
        return fail(414, "request line too long");
    if (p >= limits_.max_head) return fail(431, "request head too large");
    return ParseStatus::incomplete;
}

// The line [line_start_, cr) has ended with CRLF.
ParseStatus RequestParser::end_line(std::string_view data, std::size_t cr) {
    const std::string_view line = data.substr(line_start_, cr - line_start_);
    if (line_end_ == 0) {
        if (line.empty()) return ParseStatus::incomplete; // RFC 9112 §2.2: skip leading CRLFs
        line_end_ = cr;
        return parse_request_line(line) ? ParseStatus::incomplete : ParseStatus::error;
    }
    if (line.empty()) {
        head_size_ = cr + 2;
        return ParseStatus::done;
    }
    if (is_space(line.front())) return fail(400, "obs-fold or whitespace before a field");
    if (++fields_ > kMaxHeaders) return fail(431, "too many header fields");
    return ParseStatus::incomplete;
}

// method SP request-target SP HTTP-version, exactly one SP between parts.
bool RequestParser::parse_request_line(std::string_view line) {
    std::size_t i = 0;
    while (i < line.size() && in(kToken, line[i])) ++i;
    if (i == 0 || i == line.size() || line[i] != ' ') return refuse(400, "malformed method");
    line_.method_name = line.substr(0, i);
    line_.method = method_of(line_.method_name);

    const std::size_t target_start = ++i;
    while (i < line.size() && in(kTarget, line[i])) ++i;
    if (i == target_start) return refuse(400, "missing request-target");
    if (i == line.size()) return refuse(400, "missing HTTP version");
    if (line[i] != ' ') return refuse(400, "invalid character in request-target");
    line_.target = line.substr(target_start, i - target_start);

    const std::string_view version = line.substr(i + 1);
    if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !is_digit(version[5]) ||
        version[6] != '.' || !is_digit(version[7]))
        return refuse(400, "malformed HTTP version");
    if (version[5] != '1' || version[7] > '1') return refuse(505, "HTTP version not supported");
    line_.minor = static_cast<std::uint8_t>(version[7] - '0');
    return parse_target(line_.target);
}

// Splits the target by its form (RFC 9112 §3.2); each form only with the
// methods that use it.
bool RequestParser::parse_target(std::string_view target) {
    line_.path = line_.query = line_.authority = {};
    const bool connect = line_.method == Method::connect;
    if (target.front() == '/' && !connect) {
        const std::size_t q = target.find('?');
        line_.path = target.substr(0, q);
        line_.query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
        return true;
    }
    if (target == "*") {
        if (line_.method != Method::options) return refuse(400, "'*' target without OPTIONS");
        line_.path = target;
        return true;
    }
    if (connect) {
        if (!valid_authority_form(target)) return refuse(400, "malformed CONNECT target");
        line_.authority = target;
        return true;
    }
    std::size_t scheme = 0;
    if (starts_with_ignoring_case(target, "http://"))
        scheme = 7;
    else if (starts_with_ignoring_case(target, "https://"))
        scheme = 8;
    else
        return refuse(400, "malformed request-target");
    const std::size_t authority_end = std::min(target.find_first_of("/?", scheme), target.size());
    line_.authority = target.substr(scheme, authority_end - scheme);
    if (line_.authority.empty() || !all_in(kHost, line_.authority))
        return refuse(400, "malformed authority in request-target");
    const std::string_view rest = target.substr(authority_end);
    const std::size_t q = rest.find('?');
    line_.path = rest.substr(0, q);
    line_.query = q == std::string_view::npos ? std::string_view() : rest.substr(q + 1);
    // An empty path is "/" (RFC 9110 §4.2.3); the view stays inside the
    // buffer by pointing at the second slash of the scheme's "//".
    if (line_.path.empty()) line_.path = target.substr(scheme - 1, 1);
    return true;
}

// The head is complete and its lines are well formed: split the fields and
// apply their meaning.
ParseStatus RequestParser::fill(std::string_view data, Request& request) {
    request.method = line_.method;
    request.method_name = line_.method_name;
    request.target = line_.target;
    request.path = line_.path;
    request.query = line_.query;
    request.host = {};
    request.minor = line_.minor;
    request.expect_continue = false;
    request.chunked = false;
    request.content_length = 0;
    request.header_count = 0;
    seen_host_ = seen_length_ = seen_coding_ = close_asked_ = keep_alive_asked_ = false;

    const char* const bytes = data.data();
    const std::size_t end = head_size_ - 2; // the CR of the empty line
    std::size_t p = line_end_ + 2;
    while (p < end) {
        // The scan guarantees this line ends with CRLF before `end`.
        const std::string_view line(bytes + p, find_cr(bytes, p, end) - p);
        p += line.size() + 2;

        std::size_t colon = 0;
        while (colon < line.size() && in(kToken, line[colon])) ++colon;
        if (colon == line.size() || line[colon] != ':')
            return fail(400, colon < line.size() && is_space(line[colon])
                                 ? "whitespace before a field's colon"
                                 : "malformed header field");
        if (colon == 0) return fail(400, "empty field name");
        if (!field({line.substr(0, colon), trim(line.substr(colon + 1))}, request))
            return ParseStatus::error;
    }
    if (line_.minor == 1 && !seen_host_) return fail(400, "missing Host");
    if (request.chunked && seen_length_)
        return fail(400, "both Content-Length and Transfer-Encoding");
    if (!line_.authority.empty()) request.host = line_.authority;
    // close wins; an HTTP/1.0 connection persists only when asked to.
    request.keep_alive = !close_asked_ && (line_.minor == 1 || keep_alive_asked_);
    return ParseStatus::done;
}

// Stores one field and applies the ones that frame or steer the request.
bool RequestParser::field(Header header, Request& request) {
    if (request.header_count == kMaxHeaders) return refuse(431, "too many header fields");
    request.headers[request.header_count++] = header;
    const std::string_view name = header.name;
    const std::string_view value = header.value;
    switch (name.size()) {
    case 4:
        if (!is(name, "host")) break;
        if (seen_host_) return refuse(400, "repeated Host");
        if (!all_in(kHost, value)) return refuse(400, "malformed Host");
        seen_host_ = true;
        request.host = value;
        break;
    case 6:
        if (is(name, "expect") && line_.minor == 1 && is(value, "100-continue"))
            request.expect_continue = true;
        break;
    case 10: {
        if (!is(name, "connection")) break;
        std::string_view rest = value;
        while (!rest.empty()) {
            const std::size_t comma = std::min(rest.find(','), rest.size());
            const std::string_view option = trim(rest.substr(0, comma));
            rest.remove_prefix(std::min(comma + 1, rest.size()));
            if (is(option, "close"))
                close_asked_ = true;
            else if (is(option, "keep-alive"))
                keep_alive_asked_ = true;
        }
        break;
    }
    case 14:
        if (!is(name, "content-length")) break;
        if (seen_length_) return refuse(400, "repeated Content-Length");
        if (!parse_length(value, request.content_length))
            return refuse(400, "malformed Content-Length");
        seen_length_ = true;
        break;
    case 17:
        if (!is(name, "transfer-encoding")) break;
        if (line_.minor == 0) return refuse(400, "Transfer-Encoding in HTTP/1.0");
        // A second field makes a list ("chunked, chunked"): not just chunked.
        if (seen_coding_ || !is(value, "chunked"))
            return refuse(501, "unsupported transfer coding");
        seen_coding_ = true;
        request.chunked = true;
        break;
    default:
        break;
    }
    return true;
}

} // namespace weft::http
