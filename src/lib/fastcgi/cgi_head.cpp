#include "fastcgi/cgi_head.hpp"

#include "util/ascii.hpp"

#include <algorithm>
#include <cstring>

namespace weft::fastcgi {

namespace {

using ascii::is_digit;
using ascii::is_whitespace;
using ascii::trim_whitespace;

// The sizes first, inline: most names differ in size from the one asked
// for, and that compare costs less than the call.
bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && ascii::equals_ignoring_case(a, b);
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

CgiHead::Status CgiHead::feed(std::string_view bytes, std::size_t& consumed) {
    consumed = 0;
    if (state_ != Status::incomplete) return state_;
    // Bytes past the empty line land in the buffer too, but only the head's
    // count as consumed: the caller still has the rest in `bytes`.
    const std::size_t before = size_;
    const std::size_t n = std::min(bytes.size(), capacity_ - size_);
    if (n > 0) std::memcpy(buffer_ + size_, bytes.data(), n);
    size_ += n;

    // A line ends at LF; it is empty if nothing or a lone CR came before its
    // LF. The first empty line ends the head.
    while (scanned_ < size_) {
        const void* lf = std::memchr(buffer_ + scanned_, '\n', size_ - scanned_);
        if (lf == nullptr) {
            scanned_ = size_;
            break;
        }
        const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(lf) - buffer_);
        scanned_ = at + 1;
        const std::size_t length = at - line_start_;
        if (length == 0 || (length == 1 && buffer_[line_start_] == '\r')) {
            consumed = scanned_ - before;
            size_ = scanned_;
            return parse(scanned_);
        }
        line_start_ = scanned_;
    }
    // No empty line yet: a full buffer will never hold one.
    if (size_ == capacity_) return fail("the head does not fit its buffer");
    consumed = bytes.size();
    return state_;
}

CgiHead::Status CgiHead::parse(std::size_t head_end) {
    std::size_t at = 0;
    for (;;) {
        const auto* lf = static_cast<const char*>(std::memchr(buffer_ + at, '\n', head_end - at));
        std::string_view line(buffer_ + at, static_cast<std::size_t>(lf - buffer_) - at);
        at += line.size() + 1;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) break; // the empty line, always the last

        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) return fail("a head line without a colon");
        const std::string_view name = line.substr(0, colon);
        if (name.empty() || !ascii::kTchar.contains_all(name)) return fail("an invalid field name");
        const std::string_view value = trim_whitespace(line.substr(colon + 1));
        // A lambda, not the function's address: g++ called that once a byte.
        if (!std::all_of(value.begin(), value.end(),
                         [](char c) { return ascii::is_field_value_char(c); }))
            return fail("a control character in a field value");

        if (equals_ignoring_case(name, "status")) {
            if (has_status_) return fail("a repeated Status");
            if (!status_field(value)) return fail("an invalid Status");
            continue;
        }
        // Location and Content-Type: PHP's header($field, false) can send one
        // twice, and the later one is what the script meant; an empty
        // Location says nothing.
        if (equals_ignoring_case(name, "location")) {
            if (value.empty()) continue;
            const bool again = !location_.empty();
            location_ = value;
            if (again && replace("location", value)) continue;
        } else if (equals_ignoring_case(name, "content-type")) {
            const bool again = has_content_type_;
            has_content_type_ = true;
            content_type_ = value;
            if (again && replace("content-type", value)) continue;
        } else if (equals_ignoring_case(name, "content-length")) {
            const std::uint64_t length = parse_length(value);
            if (length == kNoLength) return fail("an invalid Content-Length");
            if (content_length_ != kNoLength) {
                if (length != content_length_) return fail("conflicting Content-Lengths");
                continue; // the same length again: one field says it
            }
            content_length_ = length;
        }
        if (field_count_ == kMaxFields) return fail("too many head fields");
        fields_[field_count_++] = {name, value};
    }
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

bool CgiHead::replace(std::string_view lower_name, std::string_view value) {
    for (std::size_t i = 0; i < field_count_; ++i) {
        if (equals_ignoring_case(fields_[i].name, lower_name)) {
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
