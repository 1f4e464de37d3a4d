#pragma once
// The `redirect` handler: answers with a status (301 by default) and a
// Location. The rest of the path after the prefix, and the query, are kept:
// `redirect /old { to = /new }` sends /old/a?b to /new/a?b.

#include "config/config.hpp"
#include "http/handler.hpp"

#include <string>

namespace weft::handlers {

class RedirectHandler final : public http::Handler {
public:
    explicit RedirectHandler(const config::RedirectHandler& config);
    void serve(http::Exchange& exchange) const override;

private:
    std::string to_;
    int status_;
};

} // namespace weft::handlers
