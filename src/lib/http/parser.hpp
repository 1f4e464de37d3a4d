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
    ParseStatus finish(std::size_t cr, Request& request);
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

// The chunked transfer coding (RFC 9112 §7.1), decoded incrementally: call
// next() with the unconsumed input; it consumes framing and hands back payload
// pieces as views into that input. Chunk extensions are skipped, trailer
// fields are checked like header fields and dropped.
class ChunkedDecoder {
public:
    enum class Status : std::uint8_t {
        data,       // `data` is payload; `consumed` bytes of input are used up
        incomplete, // every byte of input was consumed (`consumed`); more needed
        done,       // the last chunk and trailers ended after `consumed` bytes
        error,      // malformed: a bad size, a bare LF or CR, an over-long line
    };
    struct Step {
        Status status;
        std::size_t consumed;
        std::string_view data;
    };

    // A size line, extension or trailer field longer than this is an error.
    static constexpr std::size_t kMaxLine = 4096;

    Step next(std::string_view input);
    void reset();
    // Payload bytes decoded so far.
    std::uint64_t decoded() const { return decoded_; }

private:
    // In this order: step() tells size-line and trailer states by range.
    enum class State : std::uint8_t {
        size_start, // the first hex digit of a chunk-size
        size,       // more hex digits, BWS, ';' or CR
        size_space, // BWS after the size: more of it, ';' or CR
        ext,        // chunk-ext outside a quoted string
        ext_quoted, // inside a quoted chunk-ext value
        ext_escape, // after a backslash in one
        size_lf,    // the LF ending a size line
        data,       // `remaining_` payload bytes
        data_cr,    // the CR, then the LF, after a chunk's data
        data_lf,
        trailer_start, // a trailer field's first byte, or CR of the last line
        trailer_name,
        trailer_value,
        trailer_lf,
        final_lf, // the LF of the empty line that ends the body
        done,
        error,
    };
    // The trailer section is dropped, but reading it still costs time: bound
    // it like a request head.
    static constexpr std::size_t kMaxTrailer = 16384;

    bool step(char c); // one framing byte; false on a syntax error
    bool size_digit(char c);

    State state_ = State::size_start;
    std::uint64_t remaining_ = 0; // of the current chunk
    std::uint64_t decoded_ = 0;
    std::size_t line_length_ = 0;
    std::size_t trailer_size_ = 0;
    std::uint8_t digits_ = 0;
};

} // namespace weft::http
