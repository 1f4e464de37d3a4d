#include "http/path.hpp"

#include <cstring>

namespace weft::http {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Decodes every %XX once into out; the decoded length, or -1.
long decode(std::string_view raw, char* out) {
    std::size_t w = 0;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        char c = raw[i];
        if (c == '%') {
            if (i + 2 >= raw.size()) return -1;
            const int high = hex_value(raw[i + 1]);
            const int low = hex_value(raw[i + 2]);
            if (high < 0 || low < 0) return -1;
            c = static_cast<char>(high * 16 + low);
            i += 2;
        }
        if (c == '\0') return -1;
        out[w++] = c;
    }
    return static_cast<long>(w);
}

} // namespace

// Decoding comes first, so an encoded slash or dot is a slash or dot to the
// normaliser: what a handler sees is what the filesystem will see. Then the
// segments are rewritten in place: the write position never passes the read
// position, because each kept segment is written with the one slash that
// preceded it.
std::optional<std::string_view> normalize_path(std::string_view raw, char* out) {
    if (raw.empty() || raw.front() != '/') return std::nullopt;
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

} // namespace weft::http
