#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft::http {

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
