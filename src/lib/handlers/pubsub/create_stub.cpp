// Until the hub is built (handlers/pubsub), a configuration with a pubsub
// section loads but does not start.

#include "handlers/pubsub/handler.hpp"

namespace weft::handlers {

std::unique_ptr<http::Handler> create(const config::PubsubHandler&, const BuildContext&,
                                      std::string& error) {
    error = "pubsub: not built yet";
    return nullptr;
}

} // namespace weft::handlers
