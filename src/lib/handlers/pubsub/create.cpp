// The pubsub handler from its configuration.

#include "handlers/pubsub/handler.hpp"

namespace weft::handlers {

std::unique_ptr<http::Handler> create(const config::PubsubHandler& config,
                                      const BuildContext& context, std::string& error) {
    std::optional<http::Route> route = handlers::route(config.route, error);
    if (!route) return nullptr;
    if (route->kind != http::Route::Kind::prefix) {
        error = "pubsub: its route must be a prefix";
        return nullptr;
    }
    pubsub::Settings settings;
    settings.publish_from = config.publish_from;
    settings.publish_token = config.publish_token;
    settings.subprotocols = config.subprotocols;
    pubsub::SessionSettings& session = settings.session;
    session.max_message = config.max_message;
    session.max_queued = config.max_queued;
    session.ping_ms = config.ping.count() > 0 ? to_ms(config.ping) : 0;
    session.clients_publish = config.clients_publish;
    session.limits = {config.history, config.max_topics, config.history_memory};
    // The same site and route after a reload take the same topics.
    std::shared_ptr<pubsub::TopicSpace> space =
        pubsub::space_for(std::string(context.site_name()) + " " + route->path);
    return std::make_unique<PubsubHandler>(std::move(*route), std::move(settings),
                                           std::move(space));
}

} // namespace weft::handlers
