#include "fastcgi/cgi_head.hpp"

#include "util/ascii.hpp"
#include "util/byte_scan.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace weft::fastcgi {

namespace {

using ascii::is_digit;
using ascii::is_whitespace;
using ascii::trim_whitespace;

constexpr std::uint64_t kOnes = 0x0101010101010101;

std::uint64_t load8(const char* p) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    return word;
}

std::uint32_t load4(const char* p) {
    std::uint32_t word;
    std::memcpy(&word, p, 4);
    return word;
}

// Whether `name` is `lower` (as long, of lowercase letters and '-'),
// whatever its case, a word at a time: each byte of the name with bit 0x20
// set must be lower's. For a name of tchar only, just a letter's two cases
// pass: the one other byte that becomes '-' so is 0x0d, no tchar.
template <std::size_t N>
bool named(std::string_view name, const char (&lower)[N]) {
    constexpr std::size_t n = N - 1;
    static_assert(n >= 4);
    assert(name.size() == n);
    const char* const p = name.data();
    if constexpr (n < 8) {
        // Two words that overlap in the middle.
        constexpr std::uint32_t kBits = 0x20202020;
        return (load4(p) | kBits) == load4(lower) &&
               (load4(p + n - 4) | kBits) == load4(lower + n - 4);
    } else {
        for (std::size_t i = 0; i + 8 <= n; i += 8)
            if ((load8(p + i) | kOnes * 0x20) != load8(lower + i)) return false;
        // The last word overlaps the one before.
        return n % 8 == 0 || (load8(p + n - 8) | kOnes * 0x20) == load8(lower + n - 8);
    }
}

// The first byte from `p` on that is no tchar, or `end`: sixteen at a time
// while they are letters, digits or '-', any other by the table. `buffer`
// is where the head starts (a scan near its end looks at the sixteen bytes
// before `end`, not past it).
const char* skip_tchars(const char* buffer, const char* p, const char* end) {
    const auto stop = static_cast<std::size_t>(end - buffer);
    for (;;) {
        p = buffer + byte_scan::find(buffer, static_cast<std::size_t>(p - buffer), stop,
                                     byte_scan::NotNameBits{});
        if (p == end || !ascii::kTchar.contains(*p)) return p;
        ++p;
    }
}

// [from, to) without the SP and HTAB at either end.
std::string_view trimmed(const char* from, const char* to) {
    while (from < to && is_whitespace(*from)) ++from;
    while (to > from && is_whitespace(to[-1])) --to;
    return {from, static_cast<std::size_t>(to - from)};
}

// The first byte from `p` on that is no field-value byte, or `end`:
// sixteen at a time while none is a control (HTAB is one, and a value byte,
// looked at alone) or DEL.
const char* skip_value_bytes(const char* buffer, const char* p, const char* end) {
    const auto stop = static_cast<std::size_t>(end - buffer);
    for (;;) {
        p = buffer + byte_scan::find(buffer, static_cast<std::size_t>(p - buffer), stop,
                                     byte_scan::ControlBits{});
        if (p == end || !ascii::is_field_value_char(*p)) return p;
        ++p;
    }
}

// Content-Length's digits, or kNoLength if there are none, others, or too
// many to count.
std::uint64_t parse_length(std::string_view digits) {
    if (digits.empty() || digits.size() > 18) return CgiHead::kNoLength; // 10^18 - 1 at most
    std::uint64_t value = 0;
    for (char c : digits) {
        if (!is_digit(c)) return CgiHead::kNoLength;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
}

} // namespace

FieldKind field_kind(std::string_view name) {
    // By size first: most names are none of these, and their size says so.
    switch (name.size()) {
    case 6:
        if (named(name, "status")) return FieldKind::status;
        break;
    case 8:
        if (named(name, "location")) return FieldKind::location;
        break;
    case 10:
        if (named(name, "connection") || named(name, "keep-alive")) return FieldKind::hop_by_hop;
        break;
    case 12:
        if (named(name, "content-type")) return FieldKind::content_type;
        break;
    case 14:
        if (named(name, "content-length")) return FieldKind::content_length;
        break;
    case 17:
        if (named(name, "transfer-encoding")) return FieldKind::hop_by_hop;
        if (named(name, "x-accel-buffering")) return FieldKind::x_accel_buffering;
        break;
    default:
        break;
    }
    if (name.size() > 8 && named(name.substr(0, 8), "x-accel-")) return FieldKind::x_accel;
    return FieldKind::other;
}

CgiHead::Status CgiHead::feed(std::string_view bytes, std::size_t& consumed) {
    consumed = 0;
    if (state_ != Status::incomplete) return state_;
    // Bytes past the empty line land in the buffer too, but only the head's
    // count as consumed: the caller still has the rest in `bytes`.
    const std::size_t before = size_;
    const std::size_t n = std::min(bytes.size(), capacity_ - size_);
    if (n > 0) std::memcpy(buffer_ + size_, bytes.data(), n);
    size_ += n;

    // A line ends at LF; a CR right before it is no part of it. It is empty
    // if nothing or that CR came before its LF. The scan resumes at p, in
    // the line at `start`, in `phase`: they go back to the members only
    // when the bytes run out.
    const char* const end = buffer_ + size_;
    const char* start = buffer_ + line_start_;
    const char* p = buffer_ + scanned_;
    Phase phase = phase_;
    for (;;) {
        if (phase == Phase::name) {
            p = skip_tchars(buffer_, p, end);
            if (p == end) break;
            if (*p == ':' && p != start) {
                colon_ = static_cast<std::size_t>(p - buffer_);
                phase = Phase::value;
                ++p;
            } else if (p == start && (*p == '\n' || (*p == '\r' && end - p >= 2 && p[1] == '\n'))) {
                // The empty line: the head is whole.
                size_ = static_cast<std::size_t>(p - buffer_) + (*p == '\n' ? 1 : 2);
                line_start_ = scanned_ = size_;
                phase_ = Phase::name;
                consumed = size_ - before;
                return finish();
            } else if (p == start && *p == '\r' && p + 1 == end) {
                break; // the empty line, if an LF follows
            } else {
                phase = Phase::skip;
                bad_name_ = true;
            }
        }
        if (phase == Phase::value) {
            p = skip_value_bytes(buffer_, p, end);
            if (p == end) break;
            const char* lf = p;
            if (*p == '\r') {
                if (p + 1 == end) break; // the CR is looked at again with its next byte
                ++lf;
            }
            if (*lf == '\n') {
                // Past the first error, lines are only counted to the empty one.
                if (pending_ == nullptr)
                    take_field({start, colon_ - static_cast<std::size_t>(start - buffer_)},
                               trimmed(buffer_ + colon_ + 1, p));
                start = p = lf + 1;
                phase = Phase::name;
                continue;
            }
            phase = Phase::skip;
            bad_name_ = false;
            refuse("a control character in a field value");
        }
        // Phase::skip: a refused line, to its LF.
        const auto* lf =
            static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
        if (lf == nullptr) {
            p = end;
            break;
        }
        if (bad_name_) refuse(bad_line_reason(start, lf));
        start = p = lf + 1;
        phase = Phase::name;
    }
    line_start_ = static_cast<std::size_t>(start - buffer_);
    scanned_ = static_cast<std::size_t>(p - buffer_);
    phase_ = phase;
    // No empty line yet: a full buffer will never hold one.
    if (size_ == capacity_) return fail("the head does not fit its buffer");
    consumed = bytes.size();
    return state_;
}

const char* CgiHead::bad_line_reason(const char* start, const char* lf) {
    std::string_view line(start, static_cast<std::size_t>(lf - start));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // The name ends at the first colon: one with a byte that is no tchar
    // before it, or none, is invalid.
    return line.find(':') == std::string_view::npos ? "a head line without a colon"
                                                    : "an invalid field name";
}

void CgiHead::take_field(std::string_view name, std::string_view value) {
    const FieldKind kind = field_kind(name);
    switch (kind) {
    case FieldKind::status:
        if (has_status_) return refuse("a repeated Status");
        if (!status_field(value)) return refuse("an invalid Status");
        return;
    // Location and Content-Type: PHP's header($field, false) can send one
    // twice, and the later one is what the script meant; an empty Location
    // says nothing.
    case FieldKind::location: {
        if (value.empty()) return;
        const bool again = !location_.empty();
        location_ = value;
        if (again && replace(kind, value)) return;
        break;
    }
    case FieldKind::content_type: {
        const bool again = has_content_type_;
        has_content_type_ = true;
        content_type_ = value;
        if (again && replace(kind, value)) return;
        break;
    }
    case FieldKind::content_length: {
        const std::uint64_t length = parse_length(value);
        if (length == kNoLength) return refuse("an invalid Content-Length");
        if (content_length_ != kNoLength) {
            if (length != content_length_) return refuse("conflicting Content-Lengths");
            return; // the same length again: one field says it
        }
        content_length_ = length;
        break;
    }
    default:
        break;
    }
    if (field_count_ == kMaxFields) return refuse("too many head fields");
    // Member by member: g++ built the whole entry on the stack, then copied it.
    CgiField& field = fields_[field_count_++];
    field.name = name;
    field.value = value;
    field.kind = kind;
}

CgiHead::Status CgiHead::finish() {
    if (pending_ != nullptr) return fail(pending_);
    if (!has_status_ && !location_.empty() && !local_redirect()) status_ = 302;
    state_ = Status::done;
    return state_;
}

// "NNN" or "NNN reason", NNN from 200 to 599.
bool CgiHead::status_field(std::string_view value) {
    if (value.size() < 3 || !is_digit(value[0]) || !is_digit(value[1]) || !is_digit(value[2]))
        return false;
    if (value.size() > 3 && !is_whitespace(value[3])) return false;
    const int code = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
    if (code < 200 || code > 599) return false;
    status_ = code;
    reason_ = trim_whitespace(value.substr(3));
    has_status_ = true;
    return true;
}

bool CgiHead::replace(FieldKind kind, std::string_view value) {
    for (std::size_t i = 0; i < field_count_; ++i) {
        if (fields_[i].kind == kind) {
            fields_[i].value = value;
            return true;
        }
    }
    return false;
}

bool CgiHead::local_redirect() const {
    return !has_status_ && location_.size() >= 1 && location_[0] == '/' &&
           (location_.size() == 1 || location_[1] != '/');
}

CgiHead::Status CgiHead::fail(const char* why) {
    error_ = why;
    state_ = Status::error;
    return state_;
}

void CgiHead::reset() {
    size_ = 0;
    scanned_ = 0;
    line_start_ = 0;
    colon_ = 0;
    phase_ = Phase::name;
    bad_name_ = false;
    pending_ = nullptr;
    state_ = Status::incomplete;
    status_ = 200;
    has_status_ = false;
    has_content_type_ = false;
    reason_ = {};
    location_ = {};
    content_type_ = {};
    content_length_ = kNoLength;
    error_ = nullptr;
    field_count_ = 0;
}

} // namespace weft::fastcgi
