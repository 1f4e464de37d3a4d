#include "http/chunked.hpp"

#include "util/ascii.hpp"

#include <algorithm>

namespace weft::http {

namespace {

using ascii::is_tchar;
using ascii::is_whitespace;

// qdtext (RFC 9110 §5.6.4): a quoted string's bytes other than '"' and '\'.
constexpr bool is_qdtext(char c) {
    return ascii::is_field_value_char(c) && c != '"' && c != '\\';
}

} // namespace

void ChunkedDecoder::reset() {
    *this = ChunkedDecoder();
}

ChunkedDecoder::Step ChunkedDecoder::next(std::string_view input) {
    if (state_ == State::done) return {Status::done, 0, {}};
    if (state_ == State::error) return {Status::error, 0, {}};
    std::size_t i = 0;
    while (i < input.size()) {
        if (state_ == State::data) {
            const auto n =
                static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, input.size() - i));
            remaining_ -= n;
            decoded_ += n;
            if (remaining_ == 0) state_ = State::data_cr;
            return {Status::data, i + n, input.substr(i, n)};
        }
        if (!step(input[i])) {
            state_ = State::error;
            return {Status::error, i, {}};
        }
        ++i;
        if (state_ == State::done) return {Status::done, i, {}};
    }
    return {Status::incomplete, i, {}};
}

bool ChunkedDecoder::size_digit(char c) {
    const int value = ascii::hex_value(c);
    // 16 hex digits fill a uint64: one more could overflow it.
    if (value < 0 || ++digits_ > 16) return false;
    remaining_ = remaining_ << 4 | static_cast<std::uint64_t>(value);
    state_ = State::size;
    return true;
}

// One byte of framing: a size line, the CRLF after data, a trailer line. The
// decoder consumes each byte as it comes, so it never needs to see one twice
// and any split of the input decodes alike.
bool ChunkedDecoder::step(char c) {
    const bool in_size_line = state_ <= State::ext_escape;
    const bool in_trailer = state_ >= State::trailer_start && state_ <= State::final_lf;
    if ((in_size_line || in_trailer) && c != '\r' && c != '\n' && ++line_length_ > kMaxLine)
        return false;
    if (in_trailer && ++trailer_size_ > kMaxTrailer) return false;

    switch (state_) {
    case State::size_start:
        return size_digit(c);
    case State::size:
        if (c == '\r')
            state_ = State::size_lf;
        else if (c == ';')
            state_ = State::ext;
        else if (is_whitespace(c))
            state_ = State::size_space;
        else
            return size_digit(c);
        return true;
    case State::size_space:
        // BWS belongs before a ';', but whitespace that ends the line is as
        // harmless and some clients send it.
        if (c == ';')
            state_ = State::ext;
        else if (c == '\r')
            state_ = State::size_lf;
        else
            return is_whitespace(c);
        return true;
    case State::ext:
        // Extensions are skipped, so their grammar is checked loosely:
        // tokens, '=', ';', whitespace and quoted strings.
        if (c == '\r')
            state_ = State::size_lf;
        else if (c == '"')
            state_ = State::ext_quoted;
        else if (!is_tchar(c) && !is_whitespace(c) && c != ';' && c != '=')
            return false;
        return true;
    case State::ext_quoted:
        if (c == '"')
            state_ = State::ext;
        else if (c == '\\')
            state_ = State::ext_escape;
        else
            return is_qdtext(c);
        return true;
    case State::ext_escape:
        state_ = State::ext_quoted;
        return ascii::is_field_value_char(c);
    case State::size_lf:
        if (c != '\n') return false;
        line_length_ = 0;
        state_ = remaining_ == 0 ? State::trailer_start : State::data;
        return true;
    case State::data_cr:
        state_ = State::data_lf;
        return c == '\r';
    case State::data_lf:
        if (c != '\n') return false;
        digits_ = 0;
        state_ = State::size_start;
        return true;
    case State::trailer_start:
        // Whitespace here is obs-fold or a field starting with it: both errors.
        if (c == '\r')
            state_ = State::final_lf;
        else if (is_tchar(c))
            state_ = State::trailer_name;
        else
            return false;
        return true;
    case State::trailer_name:
        if (c == ':') state_ = State::trailer_value;
        return c == ':' || is_tchar(c);
    case State::trailer_value:
        if (c == '\r') state_ = State::trailer_lf;
        return c == '\r' || ascii::is_field_value_char(c);
    case State::trailer_lf:
        if (c != '\n') return false;
        line_length_ = 0;
        state_ = State::trailer_start;
        return true;
    case State::final_lf:
        if (c != '\n') return false;
        state_ = State::done;
        return true;
    case State::data:
    case State::done:
    case State::error:
        break;
    }
    return false;
}

} // namespace weft::http
