// The status handler from its configuration.

#include "handlers/status/handler.hpp"

namespace weft::handlers {

std::unique_ptr<http::Handler> create(const config::StatusHandler& config,
                                      const BuildContext& context, std::string& error) {
    std::optional<http::Route> route = handlers::route(config.route, error);
    if (!route) return nullptr;
    const std::optional<status::Format> format = status::format_named(config.format);
    if (!format) {
        error = "status: format '" + config.format + "': expected text, json, prometheus or html";
        return nullptr;
    }
    return std::make_unique<StatusHandler>(std::move(*route), *format, context.config.io_backend);
}

} // namespace weft::handlers
