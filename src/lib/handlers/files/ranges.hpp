#pragma once
// Byte ranges (RFC 9110 §14): the Range field resolved against a file's size,
// and the framing of a multipart/byteranges body.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft::handlers {

struct ByteRange {
    std::uint64_t first;
    std::uint64_t last; // inclusive
    std::uint64_t length() const { return last - first + 1; }
    bool operator==(const ByteRange&) const = default;
};

// More ranges than this in one request, or any two overlapping, and the
// whole file is sent instead: many small or repeated ranges cost far more
// to send than they save (RFC 9110 §14.2 lets a server ignore them).
inline constexpr std::size_t kMaxRanges = 16;

struct RangeRequest {
    enum class Kind : std::uint8_t {
        whole,         // no usable Range: send 200 and everything
        partial,       // 206 with ranges[0, count)
        unsatisfiable, // 416: no range starts inside the file
    };
    Kind kind = Kind::whole;
    std::uint8_t count = 0;
    ByteRange ranges[kMaxRanges]; // in the order asked, each within the file
};

// Resolves a Range field value against a representation of `size` bytes.
// A unit other than bytes, a malformed set, too many or overlapping ranges,
// or an empty file give `whole`; ranges starting past the end are dropped,
// and if none is left the answer is `unsatisfiable`.
RangeRequest parse_ranges(std::string_view field, std::uint64_t size);

// "a-b/size", the value after "bytes " in Content-Range; out holds at least
// kContentRangeCapacity bytes. Returns the length written.
inline constexpr std::size_t kContentRangeCapacity = 64;
std::size_t format_content_range(ByteRange range, std::uint64_t size, char* out);

// A multipart/byteranges body is, for each range, a part head then the
// range's bytes, and after the last one the closing delimiter:
//   "\r\n--B\r\nContent-Type: T\r\nContent-Range: bytes a-b/size\r\n\r\n" bytes
//   "\r\n--B--\r\n"
struct Multipart {
    std::string_view boundary;
    std::string_view content_type;
    std::uint64_t size; // of the whole representation

    // The head before `range`'s bytes, into `out` of `capacity` bytes: its
    // length, or 0 when it does not fit.
    std::size_t part_head(ByteRange range, char* out, std::size_t capacity) const;
    std::string_view tail(char* out, std::size_t capacity) const;
    // The exact body length, for Content-Length.
    std::uint64_t body_length(const ByteRange* ranges, std::size_t count) const;
};

// A boundary of 20 characters that no file is likely to hold.
inline constexpr std::size_t kBoundaryLength = 20;
void make_boundary(char* out);

} // namespace weft::handlers
