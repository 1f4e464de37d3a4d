#pragma once
// The `redirect` handler: answers with a status (301 by default) and a
// Location. On a prefix route the rest of the path after the prefix, and the
// query, are kept: `redirect /old { to = /new }` sends /old/a?b to /new/a?b,
// and the prefix itself (/old, or / for `redirect /`) to exactly `to`. On an
// exact or pattern route only the query is: `redirect exact / { to = /wiki/ }`
// sends /?a to /wiki/?a.

#include "config/config.hpp"
#include "handlers/build.hpp"
#include "http/handler.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace weft::handlers {

// Answers 301 to the directory a request's path names: Location is the
// normalised `path` (never raw request bytes, in which //host or /\host
// would name another site), percent-encoded, a '/', and the query.
void redirect_to_directory(http::Exchange& exchange, std::string_view path);

class RedirectHandler final : public http::Handler {
public:
    RedirectHandler(const config::RedirectHandler& config, http::Route route);
    void serve(http::Exchange& exchange) const override;
    std::string describe() const override;

private:
    std::string to_;
    int status_;
};

std::unique_ptr<http::Handler> create(const config::RedirectHandler& config,
                                      const BuildContext& context, std::string& error);

} // namespace weft::handlers
