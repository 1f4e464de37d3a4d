#pragma once
// The `response` handler: a fixed status, content type and body.

#include "config/config.hpp"
#include "http/handler.hpp"

#include <string>

namespace weft::handlers {

class ResponseHandler final : public http::Handler {
public:
    explicit ResponseHandler(const config::ResponseHandler& config);
    void serve(http::Exchange& exchange) const override;

private:
    int status_;
    std::string content_type_;
    std::string body_;
};

} // namespace weft::handlers
