#pragma once
// The `response` handler: a fixed status, content type and body.

#include "config/config.hpp"
#include "handlers/build.hpp"
#include "http/handler.hpp"

#include <memory>
#include <string>

namespace weft::handlers {

class ResponseHandler final : public http::Handler {
public:
    ResponseHandler(const config::ResponseHandler& config, http::Route route);
    void serve(http::Exchange& exchange) const override;
    std::string describe() const override;

private:
    int status_;
    std::string content_type_line_; // "Content-Type: ...\r\n", or empty
    std::string body_;
};

std::unique_ptr<http::Handler> create(const config::ResponseHandler& config,
                                      const BuildContext& context, std::string& error);

} // namespace weft::handlers
