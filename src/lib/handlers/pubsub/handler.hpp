#pragma once
// The `pubsub` handler: a hub where GET PREFIX/TOPIC subscribes (WebSocket or
// Server-Sent Events) and POST PREFIX/TOPIC publishes the body.

#include "config/config.hpp"
#include "handlers/build.hpp"
#include "http/handler.hpp"

#include <memory>
#include <string>

namespace weft::handlers {

std::unique_ptr<http::Handler> create(const config::PubsubHandler& config,
                                      const BuildContext& context, std::string& error);

} // namespace weft::handlers
