#include "handlers/pubsub/handler.hpp"

#include "http/exchange.hpp"
#include "http/forwarded.hpp"
#include "http/request.hpp"
#include "http/websocket/handshake.hpp"
#include "http/websocket/utf8.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"
#include "util/ascii.hpp"
#include "util/sha1.hpp"

#include <sys/socket.h>

#include <charconv>
#include <cstdio>

namespace weft::handlers {

namespace pubsub {

std::optional<std::string_view> topic_of(std::string_view rest) {
    if (rest.empty() || rest.size() > 200 || rest.front() == '/' || rest.back() == '/')
        return std::nullopt;
    char previous = 0;
    for (const char c : rest) {
        const bool ok = ascii::is_alpha(c) || ascii::is_digit(c) || c == '.' || c == '_' ||
                        c == '~' || c == '-' || (c == '/' && previous != '/');
        if (!ok) return std::nullopt;
        previous = c;
    }
    return rest;
}

} // namespace pubsub

namespace {

// Whether any `name` field lists `token` (comma-separated, any case).
bool has_token(const http::Request& request, std::string_view name, std::string_view token) {
    for (std::size_t i = 0; i < request.header_count; ++i) {
        const http::Header& field = request.headers[i];
        if (!ascii::equals_ignoring_case(field.name, name)) continue;
        std::string_view rest = field.value;
        while (!rest.empty()) {
            const std::size_t comma = rest.find(',');
            if (ascii::equals_ignoring_case(ascii::trim_whitespace(rest.substr(0, comma)), token))
                return true;
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
    }
    return false;
}

// Whether Accept names text/event-stream (parameters and q-values aside).
bool accepts_event_stream(const http::Request& request) {
    for (std::size_t i = 0; i < request.header_count; ++i) {
        const http::Header& field = request.headers[i];
        if (!ascii::equals_ignoring_case(field.name, "Accept")) continue;
        std::string_view rest = field.value;
        while (!rest.empty()) {
            const std::size_t comma = rest.find(',');
            std::string_view type = rest.substr(0, comma);
            type = ascii::trim_whitespace(type.substr(0, type.find(';')));
            if (ascii::equals_ignoring_case(type, "text/event-stream")) return true;
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
    }
    return false;
}

IpAddress client_address(const http::Exchange& exchange) {
    if (const http::ForwardedClient* forwarded = exchange.forwarded_client();
        forwarded && forwarded->named)
        return forwarded->address;
    if (const SocketEnds* ends = io::socket_ends(exchange.client_fd()))
        return IpAddress::of(reinterpret_cast<const sockaddr*>(&ends->peer));
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    if (::getpeername(exchange.client_fd(), reinterpret_cast<sockaddr*>(&peer), &length) != 0)
        return IpAddress{};
    return IpAddress::of(reinterpret_cast<const sockaddr*>(&peer));
}

// Whether the request came straight from this machine: a loopback peer (or
// the loopback client a trusted proxy named) and no forwarding field an
// untrusted relay added. A local reverse proxy connects from 127.0.0.1 for
// everyone it relays, and usually says so in X-Forwarded-For or Forwarded;
// one on a unix socket is the usual case of a unix socket, and one speaking
// the PROXY protocol relays by definition, so those are not local either
// (publish_from = unix: lets unix sockets in).
bool is_local(const IpAddress& address, const http::Exchange& exchange) {
    const http::ForwardedClient* forwarded = exchange.forwarded_client();
    if (!(forwarded && forwarded->named)) {
        const http::Request& request = exchange.request();
        for (const char* relayed : {"X-Forwarded-For", "Forwarded", "X-Real-IP", "Via"})
            if (!request.header(relayed).empty()) return false;
    }
    // Nothing through the PROXY protocol either, even `PROXY UNKNOWN` (which
    // keeps the proxy as the peer): the proxy relays others.
    const SocketEnds* ends = io::socket_ends(exchange.client_fd());
    if (ends && ends->proxied) return false;
    switch (address.family) {
    case IpAddress::Family::ipv4:
        return address.bytes[0] == 127;
    case IpAddress::Family::ipv6: {
        static constexpr std::uint8_t kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                                       0, 0, 0, 0, 0, 0, 0, 1};
        return std::equal(address.bytes, address.bytes + 16, kLoopback);
    }
    case IpAddress::Family::unix_socket:
    case IpAddress::Family::none:
        break;
    }
    return false;
}

// Compares in time independent of where they differ, and of the secret's
// length: their SHA-1 digests are compared, byte by byte to the end.
bool same_secret(std::string_view given, std::string_view secret) {
    const Sha1::Digest a = Sha1::of(given);
    const Sha1::Digest b = Sha1::of(secret);
    unsigned char differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i) differ |= static_cast<unsigned char>(a[i] ^ b[i]);
    return differ == 0;
}

// The topic as the client wrote it: the raw path ends with it, after one
// slash. Topics come from the decoded, normalised path, where `a%2Fb` and
// `//b` would be the names `a/b` and `b` the grammar refuses.
bool written_as_is(const http::Request& request, std::string_view topic) {
    const std::string_view raw = request.path;
    if (raw.size() < topic.size() + 2 || !raw.ends_with(topic)) return false;
    const std::size_t slash = raw.size() - topic.size() - 1;
    return raw[slash] == '/' && raw[slash - 1] != '/';
}

std::uint64_t last_event_id(const http::Request& request) {
    const std::string_view text = ascii::trim_whitespace(request.header("Last-Event-ID"));
    std::uint64_t id = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (error != std::errc{} || end != text.data() + text.size()) return 0;
    return id;
}

} // namespace

PubsubHandler::PubsubHandler(http::Route route, pubsub::Settings settings,
                             std::shared_ptr<pubsub::TopicSpace> space)
    : Handler(std::move(route)), settings_(std::move(settings)), space_(std::move(space)) {}

std::string PubsubHandler::describe() const {
    std::string text = "pubsub";
    if (settings_.session.limits.history)
        text += ", history " + std::to_string(settings_.session.limits.history);
    if (settings_.session.clients_publish) text += ", clients publish";
    return text;
}

void PubsubHandler::serve(http::Exchange& exchange) const {
    std::string_view rest =
        exchange.path().substr(std::min(prefix().size(), exchange.path().size()));
    if (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    const std::optional<std::string_view> topic = pubsub::topic_of(rest);
    if (!topic || !written_as_is(exchange.request(), *topic)) {
        exchange.send_error(404);
        return;
    }
    const http::Request& request = exchange.request();
    switch (request.method) {
    case http::Method::get:
        if (request.has_body()) {
            exchange.close_after();
            exchange.send_error(400, "A subscription has no body.");
            return;
        }
        if (has_token(request, "Upgrade", "websocket"))
            subscribe_websocket(exchange, *topic);
        else if (accepts_event_stream(request))
            subscribe_sse(exchange, *topic);
        else
            exchange.send_error(406, "Subscribe with a WebSocket upgrade or Accept: "
                                     "text/event-stream.");
        return;
    case http::Method::post:
        publish(exchange, *topic);
        return;
    default:
        exchange.header("Allow", "GET, POST");
        exchange.send_error(405);
        return;
    }
}

void PubsubHandler::subscribe_websocket(http::Exchange& exchange, std::string_view topic) const {
    namespace ws = http::websocket;
    const http::Request& request = exchange.request();
    if (request.minor == 0 || !has_token(request, "Connection", "upgrade")) {
        exchange.send_error(400, "A WebSocket upgrade needs HTTP/1.1 and Connection: upgrade.");
        return;
    }
    if (ascii::trim_whitespace(request.header("Sec-WebSocket-Version")) != "13") {
        exchange.header("Sec-WebSocket-Version", "13");
        exchange.send_error(426);
        return;
    }
    const std::string_view key = ascii::trim_whitespace(request.header("Sec-WebSocket-Key"));
    if (!ws::valid_key(key)) {
        exchange.send_error(400, "Bad Sec-WebSocket-Key.");
        return;
    }
    std::string_view offered[16];
    std::size_t offered_count = 0;
    for (std::size_t i = 0; i < request.header_count && offered_count < 16; ++i)
        if (ascii::equals_ignoring_case(request.headers[i].name, "Sec-WebSocket-Protocol"))
            offered[offered_count++] = request.headers[i].value;
    const std::string_view protocol =
        ws::select_subprotocol({offered, offered_count}, settings_.subprotocols);

    Loop& loop = *Loop::current();
    pubsub::LoopHub& hub = space_->hub(loop);
    // Subscribed before the 101 goes: what is published meanwhile is queued.
    auto session = std::make_unique<pubsub::Session>(
        pubsub::Session::Kind::websocket, exchange.client_fd(), space_, hub, settings_.session);
    if (!session->join(topic, 0)) {
        exchange.send_error(503, "Too many topics.");
        return;
    }
    const ws::AcceptValue accept = ws::accept_value(key);
    exchange.header("Sec-WebSocket-Accept", {accept.data(), accept.size()});
    if (!protocol.empty()) exchange.header("Sec-WebSocket-Protocol", protocol);
    http::HandOver over;
    if (exchange.switch_protocols("websocket", over) != 0) return;
    session->set_received(over.received);
    exchange.detach(session.release());
}

void PubsubHandler::subscribe_sse(http::Exchange& exchange, std::string_view topic) const {
    Loop& loop = *Loop::current();
    pubsub::LoopHub& hub = space_->hub(loop);
    auto session = std::make_unique<pubsub::Session>(
        pubsub::Session::Kind::sse, exchange.client_fd(), space_, hub, settings_.session);
    if (!session->join(topic, last_event_id(exchange.request()))) {
        exchange.send_error(503, "Too many topics.");
        return;
    }
    exchange.header("Content-Type", "text/event-stream");
    exchange.header("Cache-Control", "no-cache");
    exchange.header("X-Accel-Buffering", "no");
    http::HandOver over;
    if (exchange.stream_to_close(over) != 0) return;
    exchange.detach(session.release());
}

bool PubsubHandler::may_publish(http::Exchange& exchange) const {
    const bool by_address = !settings_.publish_from.empty();
    const bool by_token = !settings_.publish_token.empty();
    if (by_address || !by_token) {
        const IpAddress client = client_address(exchange);
        const bool allowed = by_address ? settings_.publish_from.allows_explicitly(client)
                                        : is_local(client, exchange);
        if (!allowed) {
            exchange.send_error(403);
            return false;
        }
    }
    if (by_token) {
        const std::string_view authorization =
            ascii::trim_whitespace(exchange.request().header("Authorization"));
        const bool bearer = ascii::starts_with_ignoring_case(authorization, "Bearer ");
        if (!bearer || !same_secret(ascii::trim_whitespace(authorization.substr(7)),
                                    settings_.publish_token)) {
            exchange.header("WWW-Authenticate", "Bearer");
            exchange.send_error(401);
            return false;
        }
    }
    return true;
}

void PubsubHandler::publish(http::Exchange& exchange, std::string_view topic) const {
    if (!may_publish(exchange)) return;
    const http::Request& request = exchange.request();
    const std::uint64_t max = settings_.session.max_message;
    if (!request.chunked && request.content_length > max) {
        exchange.close_after();
        exchange.send_error(413);
        return;
    }
    std::string body;
    body.resize(request.chunked ? std::min<std::uint64_t>(max + 1, 16 << 10)
                                : request.content_length);
    std::size_t have = 0;
    for (;;) {
        if (have == body.size()) {
            if (!request.chunked || body.size() > max) break;
            body.resize(std::min<std::uint64_t>(max + 1, body.size() * 2));
        }
        const ssize_t n = exchange.read_body(body.data() + have, body.size() - have);
        if (n < 0) return; // the connection failed, or the 413 went
        if (n == 0) break;
        have += static_cast<std::size_t>(n);
    }
    if (have > max) {
        exchange.close_after();
        exchange.send_error(413);
        return;
    }
    body.resize(have);
    const bool text = http::websocket::is_valid_utf8(
        {reinterpret_cast<const std::uint8_t*>(body.data()), body.size()});
    std::shared_ptr<pubsub::Message> message = pubsub::Message::make(body, text);
    std::string().swap(body);

    Loop& loop = *Loop::current();
    pubsub::TopicSpace::Published published;
    if (!space_->publish(topic, message, settings_.session.limits, &space_->hub(loop), published)) {
        exchange.send_error(503, "Too many topics.");
        return;
    }
    char json[80];
    const int length = std::snprintf(json, sizeof json, "{\"id\":%llu,\"subscribers\":%u}\n",
                                     static_cast<unsigned long long>(published.id),
                                     unsigned{published.subscribers});
    exchange.header("Content-Type", "application/json");
    exchange.header("Cache-Control", "no-store");
    exchange.send({json, static_cast<std::size_t>(length)});
}

} // namespace weft::handlers
