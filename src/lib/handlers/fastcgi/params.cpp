#include "handlers/fastcgi/params.hpp"

#include "loop/fd_table.hpp"
#include "loop/io.hpp"
#include "util/ascii.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

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
    static_assert(sizeof Endpoints::remote_port >= 6 && sizeof Endpoints::server_port >= 6);
    static_assert(sizeof Endpoints::remote_address >= 16 && sizeof Endpoints::server_address >= 16);
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

// One pair at `out`, whose lengths are below 128: where the next byte goes.
char* put_short_pair(char* out, std::string_view name, std::string_view value) {
    *out++ = static_cast<char>(name.size());
    *out++ = static_cast<char>(value.size());
    return fastcgi::put_bytes(fastcgi::put_bytes(out, name), value);
}

} // namespace

void Endpoints::look_up(int fd, const http::ForwardedClient* forwarded) {
    const SocketEnds* ends = io::socket_ends(fd);
    if (!ends) return encode();
    CachedEnds* cached =
        forwarded ? nullptr : &cached_ends[static_cast<unsigned>(fd) % kCachedEnds];
    if (cached && same_ends(*cached, *ends)) {
        *this = cached->endpoints;
        return;
    }
    address_text(ends->peer, remote_address, sizeof remote_address, remote_port);
    address_text(ends->local, server_address, sizeof server_address, server_port);
    https = ends->tls;
    if (forwarded) [[unlikely]] {
        if (forwarded->named) {
            std::memcpy(remote_address, forwarded->text, sizeof forwarded->text);
            std::memcpy(remote_port, forwarded->port_text, sizeof forwarded->port_text);
        }
        https = https || forwarded->https;
    }
    encode();
    if (cached) {
        cached->peer = ends->peer;
        cached->local = ends->local;
        cached->tls = ends->tls;
        cached->filled = true;
        cached->endpoints = *this;
    }
}

void Endpoints::encode() {
    static_assert(sizeof remote_address <= 48 && sizeof server_address <= 48 &&
                      sizeof remote_port <= 8 && sizeof server_port <= 8,
                  "every text fits the pairs, its length below 128");
    char* out = pairs;
    out = put_short_pair(out, "REQUEST_SCHEME", https ? "https" : "http");
    if (https) out = put_short_pair(out, "HTTPS", "on");
    out = put_short_pair(out, "REMOTE_ADDR", remote_address);
    out = put_short_pair(out, "REMOTE_PORT", remote_port);
    out = put_short_pair(out, "SERVER_ADDR", server_address);
    out = put_short_pair(out, "SERVER_PORT", server_port);
    pairs_size = static_cast<std::uint8_t>(out - pairs);
}

void write_params(fastcgi::RecordWriter& w, const http::Request& request, const ScriptParams& p,
                  const Endpoints& endpoints) {
    const std::string_view filename[] = {p.document_root, p.script_file};
    w.param("SCRIPT_FILENAME", filename);
    w.param("SCRIPT_NAME", p.script_name);
    w.param("PATH_INFO", p.path_info);
    if (!p.path_info.empty()) {
        const std::string_view translated[] = {p.document_root, p.path_info};
        w.param("PATH_TRANSLATED", translated);
    }
    w.param("REQUEST_URI", p.request_uri);
    w.param("DOCUMENT_URI", p.document_uri);
    w.param("QUERY_STRING", p.query);
    w.param("REQUEST_METHOD", p.method);
    w.param("CONTENT_TYPE", request.header("Content-Type"));
    w.param("CONTENT_LENGTH", p.content_length);
    w.param("DOCUMENT_ROOT", p.document_root);
    w.encoded_params(p.fixed);
    w.param("SERVER_PROTOCOL", request.minor == 0 ? "HTTP/1.0" : "HTTP/1.1");
    w.encoded_params({endpoints.pairs, endpoints.pairs_size});
    w.param("SERVER_NAME", p.server_name);
    if (!request.remote_user.empty()) {
        w.param("REMOTE_USER", request.remote_user);
        w.param("AUTH_TYPE", "Basic");
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

std::string fixed_params() {
    std::string pairs;
    fastcgi::encode_pair(pairs, "GATEWAY_INTERFACE", "CGI/1.1");
    fastcgi::encode_pair(pairs, "SERVER_SOFTWARE", "weft");
    // PHP built with --enable-force-cgi-redirect wants it.
    fastcgi::encode_pair(pairs, "REDIRECT_STATUS", "200");
    return pairs;
}

std::string extra_params(const std::vector<std::pair<std::string, std::string>>& params) {
    std::string pairs;
    for (const auto& [name, value] : params) fastcgi::encode_pair(pairs, name, value);
    return pairs;
}

} // namespace weft::handlers
