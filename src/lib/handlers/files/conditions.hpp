#pragma once
// Validators and conditional requests (RFC 9110 §8.8, §13): a file's
// entity-tag, and what If-Match, If-None-Match, If-Modified-Since,
// If-Unmodified-Since and If-Range make of it.

#include "http/request.hpp"

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string_view>

namespace weft::handlers {

// A strong entity-tag from the file's identity and version: inode, size,
// modification and change times in nanoseconds, in hex and quoted. The
// change time moves with every write even when the modification time is
// put back (`cp -p`, or a build's fixed SOURCE_DATE_EPOCH, of a file of the
// same size). Strong, so If-Range (which compares strongly) can resume a
// download. Returns the length written into out[0, kEtagCapacity).
inline constexpr std::size_t kEtagCapacity = 4 * 16 + 5;
std::size_t format_etag(const struct stat& st, char* out);

// The request fields a file response depends on (empty when absent).
struct Conditions {
    std::string_view if_match;
    std::string_view if_none_match;
    std::string_view if_modified_since;
    std::string_view if_unmodified_since;
    std::string_view if_range;
    std::string_view range;
    std::string_view accept_encoding;
};

// Where the fields of Conditions are in a request's head, found in one pass.
// Eight bytes to clear for each file request, where Conditions' 112 were a
// `rep stos` of 14 words (callgrind, file1k): most requests send none of
// them, and only one that does needs conditions().
class ConditionFields {
public:
    explicit ConditionFields(const http::Request& request);

    // Any of them but Accept-Encoding: without one, a whole file is sent as
    // it is.
    bool conditional() const { return conditional_; }
    std::string_view accept_encoding() const { return value(accept_encoding_field); }
    Conditions conditions() const;

private:
    enum Field : std::uint8_t {
        if_match_field,
        if_none_match_field,
        if_modified_since_field,
        if_unmodified_since_field,
        if_range_field,
        range_field,
        accept_encoding_field,
        kFields
    };
    static_assert(http::kMaxHeaders < 255, "a field's place is kept in a byte");

    std::string_view value(Field field) const {
        return at_[field] ? request_.headers[at_[field] - 1].value : std::string_view{};
    }

    const http::Request& request_;
    std::uint8_t at_[kFields] = {}; // 1 + the index of the first such field; 0: none
    bool conditional_ = false;
};

enum class Comparison : std::uint8_t { strong, weak };

// Whether the field value `list` (entity-tags, or "*") holds `etag`, a strong
// quoted tag. A weak comparison ignores W/ prefixes; a strong one never
// matches a weak tag.
bool etag_matches(std::string_view list, std::string_view etag, Comparison comparison);

enum class Verdict : std::uint8_t { proceed, not_modified, precondition_failed };

// RFC 9110 §13.2.2 in order, for a GET or HEAD of an existing file:
// If-Match, else If-Unmodified-Since (412); If-None-Match, else
// If-Modified-Since (304). Dates that do not parse are ignored.
Verdict evaluate(const Conditions& conditions, std::string_view etag, std::time_t modified);

// Whether a Range may be honoured under If-Range: always without one; with
// one, when it is our entity-tag (strongly) or exactly our modification date.
bool range_allowed(std::string_view if_range, std::string_view etag, std::time_t modified);

} // namespace weft::handlers
