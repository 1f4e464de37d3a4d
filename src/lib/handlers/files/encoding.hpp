#pragma once
// Precompressed twins: which of a file's .br and .gz twins a request's
// Accept-Encoding (RFC 9110 §12.5.3) lets us send, best first.

#include <cstdint>
#include <string_view>

namespace weft::handlers {

enum class Encoding : std::uint8_t { identity, gzip, br };
inline constexpr std::size_t kEncodings = 3;

// The twin's file name suffix, and the Content-Encoding it is sent with.
std::string_view twin_suffix(Encoding encoding);    // ".gz", ".br"; "" for identity
std::string_view content_coding(Encoding encoding); // "gzip", "br"; "" for identity

// The twins worth trying, best first; the file itself comes after them.
struct TwinOrder {
    Encoding twins[2];
    std::uint8_t count = 0;
};

// A coding is acceptable when listed, or covered by "*", with q > 0; the
// higher q wins and br wins a tie. No field (or an empty one) accepts only
// the file itself. "x-gzip" is gzip (RFC 9110 §8.4.1.3); a q-value that
// does not parse discards its element.
TwinOrder twin_order(std::string_view accept_encoding);

// A qvalue (RFC 9110 §12.4.2), "0" ["." 0*3DIGIT] or "1" ["." 0*3("0")], in
// thousandths; -1 if it is not one. (Accept's too: handlers/status.)
int qvalue(std::string_view s);

} // namespace weft::handlers
