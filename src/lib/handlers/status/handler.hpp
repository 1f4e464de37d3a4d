#pragma once
// The `status` handler: what the server is doing, as text (nginx's
// stub_status lines first), JSON, Prometheus's text exposition or a page
// for a browser (render.hpp), from counters every loop keeps of its own
// (loop/loop_stats.hpp) and the upstream pools'. Never cached.

#include "config/config.hpp"
#include "handlers/build.hpp"
#include "handlers/status/format.hpp"
#include "http/handler.hpp"

#include <memory>
#include <string>

namespace weft::handlers {

class StatusHandler final : public http::Handler {
public:
    StatusHandler(http::Route route, status::Format fallback, std::string io_backend);
    void serve(http::Exchange& exchange) const override;
    std::string describe() const override;

private:
    status::Format fallback_;
    std::string io_backend_;
};

std::unique_ptr<http::Handler> create(const config::StatusHandler& config,
                                      const BuildContext& context, std::string& error);

} // namespace weft::handlers
