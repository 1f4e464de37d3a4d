#include "http/path.hpp"

#include "util/ascii.hpp"

#include <cstdint>
#include <cstring>

namespace weft::http {

namespace {

// --- Already normal? Eight bytes at a time ---------------------------------

constexpr std::uint64_t kOnes = 0x0101010101010101;  // 0x01 in every byte
constexpr std::uint64_t kHighs = 0x8080808080808080; // 0x80 in every byte

// 0x80 in each byte of `word` that is c, and maybe in bytes above such a
// byte (a borrow): never none where there is one. Here a false mark only
// sends a path the slow way.
std::uint64_t bytes_equal(std::uint64_t word, char c) {
    const std::uint64_t x = word ^ (kOnes * static_cast<std::uint8_t>(c));
    return (x - kOnes) & ~x & kHighs;
}

template <class Word>
Word load(const char* p) {
    Word word;
    std::memcpy(&word, p, sizeof word);
    return word;
}

// The n bytes at p (1 to 8), little-endian, the bytes past them read as 'a'
// (which none of the tests below picks). Two overlapping loads, not a loop.
[[gnu::always_inline]] inline std::uint64_t load_tail(const char* p, std::size_t n) {
    std::uint64_t word;
    if (n >= 4)
        word = load<std::uint32_t>(p) | std::uint64_t{load<std::uint32_t>(p + n - 4)}
                                            << 8 * (n - 4);
    else if (n >= 2)
        word = load<std::uint16_t>(p) | std::uint64_t{load<std::uint16_t>(p + n - 2)}
                                            << 8 * (n - 2);
    else
        word = static_cast<unsigned char>(*p);
    return n == 8 ? word : word | (kOnes * 'a') << 8 * n;
}

// Nonzero when the eight bytes of `word` may need the slow way: a '%' to
// decode, a NUL to refuse, or a slash followed by a slash or a dot (an empty,
// "." or ".." segment). OR 1 folds '.' onto '/', NUL onto 0x01 and '$' onto
// '%', and a dot followed by a slash or dot looks the same: such false alarms
// ('$', 0x01, "a./b", "a..b") only cost the slow way, which is exact.
[[gnu::always_inline]] inline std::uint64_t odd(std::uint64_t word) {
    const std::uint64_t folded = word | kOnes;
    const std::uint64_t slash_or_dot = bytes_equal(folded, '/');
    return bytes_equal(folded, '%') | bytes_equal(folded, '\x01') |
           (slash_or_dot & slash_or_dot >> 8);
}

// A path of more than eight bytes is its own normal form. The words
// overlap by a byte, so that each pair of neighbours is inside one of them;
// the last one ends at the path's end.
[[gnu::noinline]] bool long_path_normal(const char* p, std::size_t n) {
    for (std::size_t i = 0; n - i > 8; i += 7)
        if (odd(load<std::uint64_t>(p + i)) != 0) return false;
    return odd(load<std::uint64_t>(p + n - 8)) == 0;
}

// `raw` (starting with '/') is its own normal form.
bool already_normal(std::string_view raw) {
    if (raw.size() > 8) return long_path_normal(raw.data(), raw.size());
    return odd(load_tail(raw.data(), raw.size())) == 0;
}

// --- Decoding and normalising -----------------------------------------------

// Decodes every %XX once into out; the decoded length, or -1.
long decode(std::string_view raw, char* out) {
    std::size_t w = 0;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        char c = raw[i];
        if (c == '%') {
            if (i + 2 >= raw.size()) return -1;
            const int high = ascii::hex_value(raw[i + 1]);
            const int low = ascii::hex_value(raw[i + 2]);
            if (high < 0 || low < 0) return -1;
            c = static_cast<char>(high * 16 + low);
            i += 2;
        }
        if (c == '\0') return -1;
        out[w++] = c;
    }
    return static_cast<long>(w);
}

// Decoding comes first, so an encoded slash or dot is a slash or dot to the
// normaliser: what a handler sees is what the filesystem will see. Then the
// segments are rewritten in place: the write position never passes the read
// position, because each kept segment is written with the one slash that
// preceded it.
[[gnu::noinline]] std::optional<std::string_view> rewrite(std::string_view raw, char* out) {
    const long decoded = decode(raw, out);
    if (decoded < 0) return std::nullopt;
    const auto size = static_cast<std::size_t>(decoded);

    std::size_t w = 0; // out[0, w) is the result so far, without a trailing slash
    bool trailing_slash = false;
    std::size_t i = 1; // out[0] is '/'
    while (i <= size) {
        const char* slash = static_cast<const char*>(std::memchr(out + i, '/', size - i));
        const std::size_t end = slash ? static_cast<std::size_t>(slash - out) : size;
        const std::size_t length = end - i;
        trailing_slash = true;
        if (length == 0 || (length == 1 && out[i] == '.')) {
            // dropped
        } else if (length == 2 && out[i] == '.' && out[i + 1] == '.') {
            if (w == 0) return std::nullopt;
            while (out[--w] != '/') {
            }
        } else {
            out[w++] = '/';
            std::memmove(out + w, out + i, length);
            w += length;
            trailing_slash = false;
        }
        i = end + 1;
    }
    if (w == 0 || trailing_slash) out[w++] = '/';
    return std::string_view(out, w);
}

} // namespace

std::optional<std::string_view> normalize_path(std::string_view raw, char* out) {
    if (raw.empty() || raw.front() != '/') return std::nullopt;
    if (already_normal(raw)) return raw; // most paths: nothing to copy
    return rewrite(raw, out);
}

void append_percent_encoded(std::string& out, std::string_view text, bool keep_slashes) {
    static constexpr ascii::ByteSet kUnreserved = ascii::ByteSet::alphanumeric_and("-._~");
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (const char c : text) {
        if (kUnreserved.contains(c) || (keep_slashes && c == '/')) {
            out += c;
            continue;
        }
        const auto byte = static_cast<unsigned char>(c);
        out += '%';
        out += kHex[byte >> 4];
        out += kHex[byte & 15];
    }
}

} // namespace weft::http
