#include "handlers/status/handler.hpp"

#include "handlers/status/figures.hpp"
#include "handlers/status/render.hpp"
#include "http/exchange.hpp"

namespace weft::handlers {

StatusHandler::StatusHandler(http::Route route, status::Format fallback, std::string io_backend)
    : Handler(std::move(route)), fallback_(fallback), io_backend_(std::move(io_backend)) {}

void StatusHandler::serve(http::Exchange& exchange) const {
    const http::Request& request = exchange.request();
    if (request.method != http::Method::get && request.method != http::Method::head) {
        exchange.header("Allow", "GET, HEAD");
        exchange.send_error(405);
        return;
    }
    const std::optional<status::Format> format =
        status::choose_format(request.query, request.header("Accept"), fallback_);
    if (!format) {
        exchange.send_error(400, "format: expected text, json, prometheus or html");
        return;
    }
    // Every answer is of now: no cache may keep one.
    exchange.header("Cache-Control", "no-store");
    // Which format depends on Accept when the query does not say.
    exchange.header("Vary", "Accept");
    if (*format == status::Format::html) {
        exchange.header("Content-Type", "text/html; charset=utf-8");
        exchange.send(status::html_page());
        return;
    }
    const status::Figures figures = status::read_figures(io_backend_);
    switch (*format) {
    case status::Format::json:
        exchange.header("Content-Type", "application/json");
        exchange.send(status::render_json(figures));
        return;
    case status::Format::prometheus:
        exchange.header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        exchange.send(status::render_prometheus(figures));
        return;
    case status::Format::text:
    case status::Format::html:
        break;
    }
    exchange.header("Content-Type", "text/plain; charset=utf-8");
    exchange.send(status::render_text(figures));
}

std::string StatusHandler::describe() const {
    return "status (" + std::string(status::format_name(fallback_)) + ")";
}

} // namespace weft::handlers
