#include "handlers/response.hpp"

#include "http/exchange.hpp"

namespace weft::handlers {

ResponseHandler::ResponseHandler(const config::ResponseHandler& config, http::Route route)
    : Handler(std::move(route)), status_(config.status), body_(config.body) {
    // Checked here once, then copied as it is into every response.
    if (!config.content_type.empty() &&
        config.content_type.find_first_of("\r\n") == std::string::npos)
        content_type_line_ = "Content-Type: " + config.content_type + "\r\n";
}

void ResponseHandler::serve(http::Exchange& exchange) const {
    exchange.status(status_);
    if (!content_type_line_.empty()) exchange.header_lines(content_type_line_);
    exchange.send(body_);
}

std::string ResponseHandler::describe() const {
    return "response " + std::to_string(status_);
}

std::unique_ptr<http::Handler> create(const config::ResponseHandler& config, const BuildContext&,
                                      std::string& error) {
    std::optional<http::Route> route = handlers::route(config.route, error);
    if (!route) return nullptr;
    return std::make_unique<ResponseHandler>(config, std::move(*route));
}

} // namespace weft::handlers
