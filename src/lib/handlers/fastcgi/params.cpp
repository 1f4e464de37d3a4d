#include "handlers/fastcgi/params.hpp"

#include "loop/fd_table.hpp"
#include "loop/io.hpp"
#include "util/ascii.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

namespace weft::handlers {

namespace {

// The decimal digits of `n`, below 1000, at `out`; their end. (to_chars
// cost 44 instructions an octet, four times this.)
char* put_small(char* out, unsigned n) {
    if (n >= 100) *out++ = static_cast<char>('0' + n / 100);
    if (n >= 10) *out++ = static_cast<char>('0' + n / 10 % 10);
    *out++ = static_cast<char>('0' + n % 10);
    return out;
}

// A port's digits and a NUL at `out`, which has room for six bytes.
void put_port(char* out, unsigned port) {
    char digits[5];
    char* d = digits + sizeof digits;
    do {
        *--d = static_cast<char>('0' + port % 10);
        port /= 10;
    } while (port != 0);
    const auto count = static_cast<std::size_t>(digits + sizeof digits - d);
    std::memcpy(out, d, count);
    out[count] = '\0';
}

// The address's text and its port's (six bytes of room: "65535" and a NUL).
void address_text(const sockaddr_in6& address, char* text, std::size_t text_size, char* port) {
    static_assert(sizeof EndpointTexts::remote_port >= 6 && sizeof EndpointTexts::server_port >= 6);
    static_assert(sizeof EndpointTexts::remote_address >= 16 &&
                  sizeof EndpointTexts::server_address >= 16);
    if (address.sin6_family == AF_INET) {
        // Four numbers by hand: inet_ntop costs ten times as much.
        const auto& in = reinterpret_cast<const sockaddr_in&>(address);
        const auto* octets = reinterpret_cast<const unsigned char*>(&in.sin_addr);
        char* p = put_small(text, octets[0]);
        for (int i = 1; i < 4; ++i) {
            *p++ = '.';
            p = put_small(p, octets[i]);
        }
        *p = '\0';
        put_port(port, ntohs(in.sin_port));
        return;
    } else if (address.sin6_family == AF_INET6) {
        const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
        inet_ntop(AF_INET6, &in6.sin6_addr, text, static_cast<socklen_t>(text_size));
        put_port(port, ntohs(in6.sin6_port));
        return;
    } else if (address.sin6_family == AF_UNIX) {
        std::memcpy(text, "unix:", 6);
        port[0] = '\0';
        return;
    } else {
        text[0] = '\0';
        port[0] = '\0';
    }
}

bool contains(std::string_view text, char c) {
    return text.find(c) != std::string_view::npos;
}

// Whether two field names are the same: the sizes first, inline, since
// most names differ in size and a call costs more than that compare.
bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && ascii::equals_ignoring_case(a, b);
}

// What look_up() last wrote for an fd's ends. Direct-mapped by fd; an entry
// serves only the ends it was made from (compared byte for byte), so it is
// exact whatever the fd now holds. No forwarded client goes in.
struct CachedEnds {
    sockaddr_in6 peer;
    sockaddr_in6 local;
    bool tls;
    bool filled;
    Endpoints endpoints;
};
constexpr std::size_t kCachedEnds = 64;
thread_local CachedEnds cached_ends[kCachedEnds];

bool same_ends(const CachedEnds& cached, const SocketEnds& ends) {
    return cached.filled && cached.tls == ends.tls &&
           std::memcmp(&cached.peer, &ends.peer, sizeof ends.peer) == 0 &&
           std::memcmp(&cached.local, &ends.local, sizeof ends.local) == 0;
}

// The params that are the same for every request, encoded (a byte per
// length): GATEWAY_INTERFACE, SERVER_SOFTWARE, and REDIRECT_STATUS, which
// PHP built with --enable-force-cgi-redirect wants. A constant of the
// program, so no input of the params cache below.
constexpr std::string_view kFixedPairs = "\x11\x07"
                                         "GATEWAY_INTERFACECGI/1.1"
                                         "\x0f\x04"
                                         "SERVER_SOFTWAREweft"
                                         "\x0f\x03"
                                         "REDIRECT_STATUS200";

// One pair at `out`, whose lengths are below 128: where the next byte goes.
char* put_short_pair(char* out, std::string_view name, std::string_view value) {
    *out++ = static_cast<char>(name.size());
    *out++ = static_cast<char>(value.size());
    return fastcgi::put_bytes(fastcgi::put_bytes(out, name), value);
}

// --- The per-thread params cache (params.hpp) --------------------------------
//
// A slot holds a key, every input write_params reads, each as a 2-byte size
// and its bytes, and the pairs those inputs made. Direct-mapped by the
// client's fd like cached_ends; a slot serves whichever request has its
// inputs, so two connections sharing one only cost each other misses.

constexpr std::size_t kParamsSlots = 64;
constexpr std::size_t kParamsSlotBytes = 4096;

// A slot whose entries go unused (a browser's requests differ; more
// connections than slots) keeps fewer: after `unused` entries in a row that
// no request copied, it waits 2^unused misses before keeping another, so
// writing keys costs an all-miss load little. A copy starts over.
constexpr std::uint8_t kMaxUnused = 4;

struct ParamsSlot {
    std::uint16_t key_size; // 0: empty
    std::uint16_t pairs_size;
    std::uint8_t copied;              // the entry here was copied
    std::uint8_t unused;              // entries in a row that were not
    std::uint16_t waited;             // misses since an entry was last kept
    char bytes[kParamsSlotBytes - 8]; // the key, then the pairs
};

// The table, made on a thread's first FastCGI request: calloc's fresh pages
// cost memory only once a slot is written.
struct FreeSlots {
    void operator()(ParamsSlot* slots) const { std::free(slots); }
};
thread_local std::unique_ptr<ParamsSlot[], FreeSlots> params_slots;
thread_local std::uint64_t reused_count = 0;

ParamsSlot* params_slot(int fd) {
    if (fd < 0) return nullptr;
    if (!params_slots) [[unlikely]] {
        params_slots.reset(static_cast<ParamsSlot*>(std::calloc(kParamsSlots, sizeof(ParamsSlot))));
        if (!params_slots) return nullptr;
    }
    return &params_slots[static_cast<unsigned>(fd) % kParamsSlots];
}

// Every input of encode_params, in the order they are compared: those that
// differ most often between requests first, so a miss is found early. The
// request's fields and version are its head's, as sent: the same bytes
// parse to the same fields, so one compare of them stands for all of them.
static_assert(sizeof(ScriptParams) == 11 * sizeof(std::string_view),
              "a new field of ScriptParams goes into the key too");
template <class Key>
bool each_input(Key& key, const http::Request& request, const ScriptParams& p,
                const Endpoints& endpoints) {
    return key.text(p.request_uri) && key.text(request.head) &&
           key.text({endpoints.pairs, endpoints.pairs_size}) && key.text(p.document_uri) &&
           key.text(p.script_name) && key.text(p.script_file) && key.text(p.path_info) &&
           key.text(p.query) && key.text(p.method) && key.text(p.content_length) &&
           key.text(p.server_name) && key.text(p.document_root) && key.text(p.extra) &&
           key.text(request.remote_user);
}

std::uint16_t load16(const char* p) {
    std::uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Whether `n` bytes at `a` and `b` are the same: short runs by two words
// each (overlapping when they must), so most keys take no call.
[[gnu::always_inline]] inline bool same_bytes(const char* a, const char* b, std::size_t n) {
    const auto word = [](const char* p, auto type) {
        decltype(type) v;
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    if (n > 16) return std::memcmp(a, b, n) == 0;
    if (n >= 8) {
        const std::uint64_t z = std::uint64_t{};
        return ((word(a, z) ^ word(b, z)) | (word(a + n - 8, z) ^ word(b + n - 8, z))) == 0;
    }
    if (n >= 4) {
        const std::uint32_t z = std::uint32_t{};
        return ((word(a, z) ^ word(b, z)) | (word(a + n - 4, z) ^ word(b + n - 4, z))) == 0;
    }
    return n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]);
}

// Compares the inputs with a slot's key, one after the other.
struct KeyMatch {
    const char* at;
    [[gnu::always_inline]] bool text(std::string_view text) {
        if (load16(at) != text.size() || !same_bytes(at + 2, text.data(), text.size()))
            return false;
        at += 2 + text.size();
        return true;
    }
};

// Writes the inputs into a slot's key; false when they do not fit.
struct KeyStore {
    char* at;
    char* end;
    [[gnu::always_inline]] bool text(std::string_view text) {
        const std::size_t n = text.size();
        if (n + 2 > static_cast<std::size_t>(end - at)) return false;
        const auto size = static_cast<std::uint16_t>(n);
        std::memcpy(at, &size, 2);
        char* const to = at + 2;
        const char* const from = text.data();
        // Short runs by two words each, overlapping when they must (both
        // read before either is written), so most keys take no call.
        if (n > 16) {
            std::memcpy(to, from, n);
        } else if (n >= 8) {
            std::uint64_t head, tail;
            std::memcpy(&head, from, 8);
            std::memcpy(&tail, from + n - 8, 8);
            std::memcpy(to, &head, 8);
            std::memcpy(to + n - 8, &tail, 8);
        } else if (n >= 4) {
            std::uint32_t head, tail;
            std::memcpy(&head, from, 4);
            std::memcpy(&tail, from + n - 4, 4);
            std::memcpy(to, &head, 4);
            std::memcpy(to + n - 4, &tail, 4);
        } else if (n > 0) {
            to[0] = from[0];
            to[n / 2] = from[n / 2];
            to[n - 1] = from[n - 1];
        }
        at = to + n;
        return true;
    }
};

} // namespace

void Endpoints::look_up(int fd, const http::ForwardedClient* forwarded) {
    const SocketEnds* ends = io::socket_ends(fd);
    this->fd = fd;
    EndpointTexts texts;
    if (!ends) return encode(texts);
    CachedEnds* cached =
        forwarded ? nullptr : &cached_ends[static_cast<unsigned>(fd) % kCachedEnds];
    if (cached && same_ends(*cached, *ends)) {
        // The pairs alone: the whole entry, texts and all, cost a request
        // 40 instructions more.
        pairs_size = cached->endpoints.pairs_size;
        std::memcpy(pairs, cached->endpoints.pairs, pairs_size);
        return;
    }
    address_text(ends->peer, texts.remote_address, sizeof texts.remote_address, texts.remote_port);
    address_text(ends->local, texts.server_address, sizeof texts.server_address, texts.server_port);
    texts.https = ends->tls;
    if (forwarded) [[unlikely]] {
        if (forwarded->named) {
            std::memcpy(texts.remote_address, forwarded->text, sizeof forwarded->text);
            std::memcpy(texts.remote_port, forwarded->port_text, sizeof forwarded->port_text);
        }
        texts.https = texts.https || forwarded->https;
    }
    encode(texts);
    if (cached) {
        cached->peer = ends->peer;
        cached->local = ends->local;
        cached->tls = ends->tls;
        cached->filled = true;
        cached->endpoints = *this;
    }
}

void Endpoints::encode(const EndpointTexts& texts) {
    static_assert(sizeof texts.remote_address <= 48 && sizeof texts.server_address <= 48 &&
                      sizeof texts.remote_port <= 8 && sizeof texts.server_port <= 8,
                  "every text fits the pairs, its length below 128");
    char* out = pairs;
    out = put_short_pair(out, "REQUEST_SCHEME", texts.https ? "https" : "http");
    if (texts.https) out = put_short_pair(out, "HTTPS", "on");
    out = put_short_pair(out, "REMOTE_ADDR", texts.remote_address);
    out = put_short_pair(out, "REMOTE_PORT", texts.remote_port);
    out = put_short_pair(out, "SERVER_ADDR", texts.server_address);
    out = put_short_pair(out, "SERVER_PORT", texts.server_port);
    pairs_size = static_cast<std::uint8_t>(out - pairs);
}

std::string_view Endpoints::param(std::string_view name) const {
    // Each length is one byte: every pair here is short.
    for (std::size_t at = 0; at + 2 <= pairs_size;) {
        const auto name_size = static_cast<unsigned char>(pairs[at]);
        const auto value_size = static_cast<unsigned char>(pairs[at + 1]);
        const std::string_view pair_name{pairs + at + 2, name_size};
        if (pair_name == name) return {pairs + at + 2 + name_size, value_size};
        at += 2 + name_size + value_size;
    }
    return {};
}

namespace {

// What the pairs before the request's fields take, in bytes.
struct PairSizes {
    std::size_t size = 0;
    void param(std::string_view name, std::string_view value) {
        size += fastcgi::length_size(name.size()) + fastcgi::length_size(value.size()) +
                name.size() + value.size();
    }
    void param(std::string_view name, std::span<const std::string_view> parts) {
        std::size_t value = 0;
        for (std::string_view part : parts) value += part.size();
        size +=
            fastcgi::length_size(name.size()) + fastcgi::length_size(value) + name.size() + value;
    }
    void encoded_params(std::string_view pairs) { size += pairs.size(); }
};

// Writes them at `out`, whose room PairSizes measured.
struct PairBytes {
    char* out;
    [[gnu::always_inline]] void param(std::string_view name, std::string_view value) {
        out = fastcgi::put_length(fastcgi::put_length(out, name.size()), value.size());
        out = fastcgi::put_bytes(fastcgi::put_bytes(out, name), value);
    }
    void param(std::string_view name, std::span<const std::string_view> parts) {
        std::size_t value = 0;
        for (std::string_view part : parts) value += part.size();
        out = fastcgi::put_bytes(fastcgi::put_length(fastcgi::put_length(out, name.size()), value),
                                 name);
        for (std::string_view part : parts) out = fastcgi::put_bytes(out, part);
    }
    void encoded_params(std::string_view pairs) { out = fastcgi::put_bytes(out, pairs); }
};

// The pairs before the request's fields, to a PairSizes, a PairBytes or the
// writer itself (which checks its room before each).
template <class To>
void leading_pairs(To& to, const http::Request& request, const ScriptParams& p,
                   const Endpoints& endpoints, std::string_view content_type) {
    const std::string_view filename[] = {p.document_root, p.script_file};
    to.param("SCRIPT_FILENAME", filename);
    to.param("SCRIPT_NAME", p.script_name);
    to.param("PATH_INFO", p.path_info);
    if (!p.path_info.empty()) {
        const std::string_view translated[] = {p.document_root, p.path_info};
        to.param("PATH_TRANSLATED", translated);
    }
    to.param("REQUEST_URI", p.request_uri);
    to.param("DOCUMENT_URI", p.document_uri);
    to.param("QUERY_STRING", p.query);
    to.param("REQUEST_METHOD", p.method);
    to.param("CONTENT_TYPE", content_type);
    to.param("CONTENT_LENGTH", p.content_length);
    to.param("DOCUMENT_ROOT", p.document_root);
    to.encoded_params(kFixedPairs);
    to.param("SERVER_PROTOCOL", request.minor == 0 ? "HTTP/1.0" : "HTTP/1.1");
    to.encoded_params({endpoints.pairs, endpoints.pairs_size});
    to.param("SERVER_NAME", p.server_name);
    if (!request.remote_user.empty()) {
        to.param("REMOTE_USER", request.remote_user);
        to.param("AUTH_TYPE", "Basic");
    }
}

void encode_params(fastcgi::RecordWriter& w, const http::Request& request, const ScriptParams& p,
                   const Endpoints& endpoints) {
    // Sizes first: when they all fit the open record, one room check for
    // the twenty pairs, and the same bytes and records as pair by pair.
    const std::string_view content_type = request.header("Content-Type");
    PairSizes sizes;
    leading_pairs(sizes, request, p, endpoints, content_type);
    if (char* out = sizes.size <= fastcgi::kMaxContent ? w.params_space(sizes.size) : nullptr) {
        PairBytes bytes{out};
        leading_pairs(bytes, request, p, endpoints, content_type);
    } else {
        leading_pairs(w, request, p, endpoints, content_type);
    }

    // Request fields; a repeated one once, with every value.
    const http::Header* const headers = request.headers;
    const std::size_t count = request.header_count;
    for (std::size_t i = 0; i < count; ++i) {
        const std::string_view name = headers[i].name;
        if (contains(name, '_') || same_name(name, "Proxy")) continue;
        bool seen = false;
        for (std::size_t j = 0; j < i && !seen; ++j) seen = same_name(headers[j].name, name);
        if (seen) continue;
        const std::string_view separator = same_name(name, "Cookie") ? "; " : ", ";
        std::size_t again = i + 1;
        while (again < count && !same_name(headers[again].name, name)) ++again;
        if (again == count) { // the usual: the field came once
            w.header_param(name, {&headers[i].value, 1}, separator);
            continue;
        }
        // Here only: the array is zeroed where it is declared, and it is
        // large (kMaxHeaders views), a cost per request if it were above.
        std::string_view values[http::kMaxHeaders];
        std::size_t n = 0;
        values[n++] = headers[i].value;
        for (std::size_t j = again; j < count; ++j)
            if (same_name(headers[j].name, name)) values[n++] = headers[j].value;
        w.header_param(name, {values, n}, separator);
    }

    w.encoded_params(p.extra);
}

} // namespace

void write_params(fastcgi::RecordWriter& w, const http::Request& request, const ScriptParams& p,
                  const Endpoints& endpoints) {
    // A request not as sent (an error page's) has fields its head does not
    // say: it is not kept.
    ParamsSlot* const slot = request.head.data() ? params_slot(endpoints.fd) : nullptr;
    if (!slot) return encode_params(w, request, p, endpoints);
    if (slot->key_size != 0) {
        KeyMatch match{slot->bytes};
        if (each_input(match, request, p, endpoints) && match.at == slot->bytes + slot->key_size &&
            w.encoded_params_in_place({match.at, slot->pairs_size})) {
            ++reused_count;
            slot->copied = 1;
            slot->unused = 0;
            return;
        }
    }
    const fastcgi::RecordWriter::Mark mark = w.mark();
    encode_params(w, request, p, endpoints);
    if (++slot->waited < 1u << slot->unused) return;
    if (slot->key_size != 0 && !slot->copied && slot->unused < kMaxUnused) ++slot->unused;
    slot->waited = 0;
    slot->copied = 0;
    // Kept when the pairs are all in the buffer, in one record: so is the
    // copy a later request gets.
    const std::string_view pairs = w.params_since(mark);
    slot->key_size = 0;
    KeyStore store{slot->bytes, slot->bytes + sizeof slot->bytes};
    if (pairs.empty() || !each_input(store, request, p, endpoints) ||
        pairs.size() > static_cast<std::size_t>(store.end - store.at))
        return;
    std::memcpy(store.at, pairs.data(), pairs.size());
    slot->pairs_size = static_cast<std::uint16_t>(pairs.size());
    slot->key_size = static_cast<std::uint16_t>(store.at - slot->bytes);
}

std::uint64_t reused_params() {
    return reused_count;
}

std::string extra_params(const std::vector<std::pair<std::string, std::string>>& params) {
    std::string pairs;
    for (const auto& [name, value] : params) fastcgi::encode_pair(pairs, name, value);
    return pairs;
}

} // namespace weft::handlers
