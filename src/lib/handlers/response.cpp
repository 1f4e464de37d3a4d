#include "handlers/response.hpp"

#include "http/exchange.hpp"

namespace weft::handlers {

ResponseHandler::ResponseHandler(const config::ResponseHandler& config)
    : Handler(config.prefix), status_(config.status), content_type_(config.content_type),
      body_(config.body) {}

void ResponseHandler::serve(http::Exchange& exchange) const {
    exchange.status(status_);
    if (!content_type_.empty()) exchange.header("Content-Type", content_type_);
    exchange.send(body_);
}

} // namespace weft::handlers
