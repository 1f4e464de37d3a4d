#pragma once
// The CGI response head a FastCGI application sends at the start of its
// STDOUT stream (RFC 3875 §6): header lines, then an empty line, then the
// body.
//
// CgiHead gathers the head into a caller's buffer as STDOUT bytes arrive, in
// pieces of any size, and parses it once the empty line is in. Lines end with
// LF or CRLF (CGI allows both). Strict, because what it accepts is copied
// into the client's response: a line without a colon, an empty or invalid
// field name, a control character (a bare CR, NUL) in a value, or a head that
// does not fit the buffer is an error (the proxy answers 502).
//
// What it extracts:
//   Status: "404 Not Found" or "404": the status, three digits from 200
//           to 599 (anything else is an error); the reason may be missing;
//   Location: kept as a field, and noted: a local path ("/x", not "//x")
//           without a Status is a local redirect (RFC 3875 §6.2.2); any other
//           Location without a Status means 302;
//   Content-Length: a valid decimal length is noted (and stays a field);
//   every other field is kept as it came, in order (Set-Cookie repeated).
// The default status is 200. Status may come once; a repeated Location or
// Content-Type replaces the earlier one (PHP's header($f, false) sends
// both), an empty Location is dropped; Content-Length again with the same
// length is dropped, with another an error.
//
// Each line is parsed as soon as its LF is in, in one pass over its bytes
// (no search for the line's end, then for its colon, then a check). An
// error is kept until the empty line: a head is refused only once it is
// whole (or cannot be), with the first error in it, as if it were parsed
// then. Every field's name is classified once, here (FieldKind), so that
// nothing downstream compares names again.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft::fastcgi {

// The names this parser and the fastcgi handler act on, whatever their case.
enum class FieldKind : std::uint8_t {
    other,
    status, // never in fields(): it becomes status() and reason()
    location,
    content_type,
    content_length,
    hop_by_hop,        // Connection, Keep-Alive, Transfer-Encoding: framing is the proxy's
    x_accel_buffering, // X-Accel-Buffering
    x_accel,           // any other X-Accel-*: instructions to the proxy
};

// The kind of a field name made of tchar only (RFC 9110 §5.6.2).
FieldKind field_kind(std::string_view name);

struct CgiField {
    std::string_view name;
    std::string_view value; // surrounding whitespace removed
    FieldKind kind;
};

class CgiHead {
public:
    enum class Status : std::uint8_t { incomplete, done, error };

    static constexpr std::size_t kMaxFields = 128;
    static constexpr std::uint64_t kNoLength = ~std::uint64_t{0};

    // The head is gathered in buffer[0, capacity).
    CgiHead(char* buffer, std::size_t capacity) : buffer_(buffer), capacity_(capacity) {}
    CgiHead(const CgiHead&) = delete;
    CgiHead& operator=(const CgiHead&) = delete;

    // Takes STDOUT bytes. `consumed` says how many belonged to the head: on
    // done, bytes[consumed...] are the start of the body; on incomplete, all
    // were taken. Past done or error it takes nothing and says the same.
    Status feed(std::string_view bytes, std::size_t& consumed);

    // After done:
    int status() const { return status_; }                  // 200 unless told
    std::string_view reason() const { return reason_; }     // from Status:, maybe empty
    bool has_status() const { return has_status_; }         // a Status field came
    std::string_view location() const { return location_; } // empty if none
    bool local_redirect() const;
    std::uint64_t content_length() const { return content_length_; } // or kNoLength
    std::string_view content_type() const { return content_type_; }
    // Every field but Status, in order.
    const CgiField* fields() const { return fields_; }
    std::size_t field_count() const { return field_count_; }
    // After error: what was wrong, in a few words.
    const char* error() const { return error_; }

    // Forgets everything, for the next response.
    void reset();

private:
    // Where the scan of the current line is.
    enum class Phase : std::uint8_t {
        name,  // in the field name (or at the line's start)
        value, // past the colon
        skip,  // in a line already refused: only its LF is looked for
    };
    // Why the refused line [start, lf) is, when the name scan stopped at
    // a byte that is no colon.
    static const char* bad_line_reason(const char* start, const char* lf);
    // The field line just scanned, as the head's (pending_ set if it is
    // refused).
    void take_field(std::string_view name, std::string_view value);
    // The head is whole: done, or its first error.
    Status finish();
    bool status_field(std::string_view value);
    // Gives the field of `kind` (a repeated Location or Content-Type) its
    // new value; false if there is none.
    bool replace(FieldKind kind, std::string_view value);
    void refuse(const char* why) {
        if (pending_ == nullptr) pending_ = why;
    }
    Status fail(const char* why);

    char* buffer_;
    std::size_t capacity_;
    std::size_t size_ = 0;       // bytes gathered
    std::size_t scanned_ = 0;    // where the scan resumes
    std::size_t line_start_ = 0; // where the line being scanned starts
    std::size_t colon_ = 0;      // the current line's colon, in Phase::value
    Phase phase_ = Phase::name;
    bool bad_name_ = false;         // in Phase::skip: the name scan found no colon
    const char* pending_ = nullptr; // the first error, reported at the empty line
    Status state_ = Status::incomplete;
    int status_ = 200;
    bool has_status_ = false;
    bool has_content_type_ = false;
    std::string_view reason_;
    std::string_view location_;
    std::string_view content_type_;
    std::uint64_t content_length_ = kNoLength;
    const char* error_ = nullptr;
    std::size_t field_count_ = 0;
    CgiField fields_[kMaxFields];
};

} // namespace weft::fastcgi
