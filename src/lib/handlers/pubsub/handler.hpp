#pragma once
// The `pubsub` handler: a hub where GET PREFIX/TOPIC subscribes (a WebSocket
// upgrade, or Accept: text/event-stream) and POST PREFIX/TOPIC publishes the
// body. After the handshake a subscriber is a Session (session.hpp) the
// connection hands its fd to: no coroutine holds it. Topics are a
// TopicSpace's (topics.hpp), kept across reloads by site and route.

#include "config/config.hpp"
#include "handlers/build.hpp"
#include "handlers/pubsub/session.hpp"
#include "handlers/pubsub/topics.hpp"
#include "http/handler.hpp"
#include "util/cidr.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::handlers {

namespace pubsub {

// TOPIC from the path's rest after the prefix: 1 to 200 bytes of
// [A-Za-z0-9._~-] and '/', no segment empty; nullopt for anything else (404).
std::optional<std::string_view> topic_of(std::string_view rest);

struct Settings {
    AccessRules publish_from;
    std::string publish_token;
    std::vector<std::string> subprotocols;
    SessionSettings session;
};

} // namespace pubsub

class PubsubHandler final : public http::Handler {
public:
    PubsubHandler(http::Route route, pubsub::Settings settings,
                  std::shared_ptr<pubsub::TopicSpace> space);
    void serve(http::Exchange& exchange) const override;
    std::string describe() const override;

private:
    void subscribe_websocket(http::Exchange& exchange, std::string_view topic) const;
    void subscribe_sse(http::Exchange& exchange, std::string_view topic) const;
    void publish(http::Exchange& exchange, std::string_view topic) const;
    // Whether the client may publish; if not, its 403 or 401 went.
    bool may_publish(http::Exchange& exchange) const;

    pubsub::Settings settings_;
    std::shared_ptr<pubsub::TopicSpace> space_;
};

std::unique_ptr<http::Handler> create(const config::PubsubHandler& config,
                                      const BuildContext& context, std::string& error);

} // namespace weft::handlers
