#pragma once
// The request-head parser: strict RFC 9112, incremental, zero-copy.
//
// The connection reads into its buffer and calls parse() with everything
// received so far; parse() resumes its scan where the last call stopped, so
// a head arriving byte by byte costs linear time. Each line is parsed once,
// when its CRLF arrives, into a Request of views into that buffer; the scans
// look at 16 or 32 bytes at a time.
//
// Strict where RFC 9112 allows a choice, because a lenient server behind a
// proxy that parses differently is a request-smuggling hole: a bare CR or a
// bare LF anywhere in the head, NUL or another control character, obs-fold,
// whitespace before a field's colon, Content-Length with Transfer-Encoding,
// an invalid or repeated Content-Length, a Transfer-Encoding other than
// `chunked`, a missing or repeated Host in HTTP/1.1 — each is an error that
// closes the connection.

#include "http/request.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft::http {

struct ParserLimits {
    std::size_t max_request_line = 8192; // longer: 414
    std::size_t max_head = 16384;        // request line + fields + blank line; longer: 431
};

enum class ParseStatus : std::uint8_t { incomplete, done, error };

class RequestParser {
public:
    explicit RequestParser(ParserLimits limits = {}) : limits_(limits) {}

    // Parses the head at the start of `data` (everything received so far of
    // this request, the same bytes at the same address and the same `request`
    // on every call: field lines are stored in it as they arrive, so its
    // contents mean nothing until `done`).
    //   incomplete: more bytes are needed;
    //   done: `request` is filled and head_size() bytes of `data` are the head
    //         (another call parses the same head again, into any Request);
    //   error: error_status() is 400, 414, 431, 501 (a transfer coding it does
    //          not know) or 505 (a version other than HTTP/1.0 and 1.1), and
    //          error_reason() says why in a few words.
    ParseStatus parse(std::string_view data, Request& request);

    // Forgets the scan, for the next request.
    void reset();

    std::size_t head_size() const { return head_size_; }
    int error_status() const { return error_status_; }
    std::string_view error_reason() const { return error_reason_; }

private:
    // What the scan does after a special byte that is not the CR of a CRLF.
    enum class Next : std::uint8_t { skip, line_end, more, error };
    // The fields that frame or steer the request.
    enum class Known : std::uint8_t {
        other,
        host,
        expect,
        connection,
        content_length,
        transfer_encoding
    };

    ParseStatus fail(int status, std::string_view reason);
    bool refuse(int status, std::string_view reason); // fail(), then false
    ParseStatus scan(std::string_view data, Request& request);
    Next odd_byte(const char* bytes, std::size_t size, std::size_t p);
    ParseStatus more(std::size_t p);
    ParseStatus finish(const char* bytes, std::size_t cr, Request& request);
    // These return false (or 0) after refuse(). The inline ones are the
    // scan's common path, defined in parser.cpp, their one user.
    inline bool parse_request_line(const char* bytes, std::size_t start, std::size_t end,
                                   Request& request);
    bool parse_other_target(Request& request);
    inline bool field_line(const char* bytes, std::size_t cr, Request& request);
    std::size_t odd_name(const char* bytes, std::size_t cr, std::size_t stopped);
    static inline Known known(std::string_view name);
    bool field(Known known, std::string_view value, std::uint8_t minor);

    ParserLimits limits_;
    std::size_t scanned_ = 0;    // bytes already checked for the end of the head
    std::size_t line_start_ = 0; // of the line being scanned
    std::size_t line_end_ = 0;   // end of the request line once seen, else 0
    std::size_t head_size_ = 0;
    std::size_t fields_ = 0; // field lines seen, stored in the Request's headers[]
    int error_status_ = 0;
    std::string_view error_reason_;
    // What field() has seen of this head; the request line's parts go
    // straight into the Request.
    std::string_view host_;
    std::uint64_t content_length_ = 0;
    bool seen_host_ = false, seen_length_ = false, chunked_ = false;
    bool expect_continue_ = false, close_asked_ = false, keep_alive_asked_ = false;
};

} // namespace weft::http
