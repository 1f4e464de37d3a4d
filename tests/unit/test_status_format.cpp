// Which format a status request gets: ?format= first, then Accept's
// q-values, then the handler's default (handlers/status/format.hpp); and
// the figures' quantiles and escapes the renderers rely on.

#include "handlers/status/figures.hpp"
#include "handlers/status/format.hpp"
#include "handlers/status/render.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace weft::handlers::status;

TEST_CASE("status: ?format= wins, any case, and a name we lack is refused", "[status]") {
    CHECK(choose_format("format=json", "text/html", Format::text) == Format::json);
    CHECK(choose_format("a=1&format=PROMETHEUS&b", "", Format::text) == Format::prometheus);
    CHECK(choose_format("format=html", "", Format::json) == Format::html);
    CHECK(choose_format("format=text", "application/json", Format::html) == Format::text);
    CHECK_FALSE(choose_format("format=xml", "", Format::text));
    CHECK_FALSE(choose_format("format=", "", Format::text));
    // Not a parameter named format.
    CHECK(choose_format("xformat=json", "", Format::text) == Format::text);
}

TEST_CASE("status: Accept picks the best q, the most specific range names it", "[status]") {
    CHECK(accepted_format("", Format::text) == Format::text);
    CHECK(accepted_format("*/*", Format::json) == Format::json);
    CHECK(accepted_format("text/*", Format::prometheus) == Format::prometheus);
    CHECK(accepted_format("application/json", Format::text) == Format::json);
    CHECK(accepted_format("Application/JSON; charset=utf-8", Format::text) == Format::json);
    CHECK(accepted_format("text/plain", Format::json) == Format::text);
    CHECK(accepted_format("text/plain; version=0.0.4", Format::text) == Format::prometheus);
    CHECK(accepted_format("text/plain;version=\"0.0.4\";q=0.9", Format::text) ==
          Format::prometheus);
    // A browser's.
    CHECK(accepted_format("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
                          Format::text) == Format::html);
    // Prometheus's scraper: no OpenMetrics here, its 0.0.4 text is next.
    CHECK(accepted_format("application/openmetrics-text;version=1.0.0,application/"
                          "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
                          "q=0.5,*/*;q=0.1",
                          Format::text) == Format::prometheus);
    CHECK(accepted_format("application/json;q=0.1, text/plain;q=0.9", Format::json) ==
          Format::text);
    // q=0 refuses; a bad q drops the element; a tie goes to html, json, prometheus, text.
    CHECK(accepted_format("application/json;q=0, text/html;q=0", Format::text) == Format::text);
    CHECK(accepted_format("application/json;q=2, text/html;q=0.5", Format::text) == Format::html);
    CHECK(accepted_format("application/json, text/html", Format::text) == Format::html);
    // Garbage is no choice.
    CHECK(accepted_format(",,;;,/,json,text/,=/=", Format::json) == Format::json);
}

TEST_CASE("status: a wait quantile is the bound of the bucket that holds it", "[status]") {
    WaitFigures wait;
    CHECK(wait.quantile_ms(0.5) == 0);
    wait.buckets.assign(wait_bounds_ms().size() + 1, 0);
    wait.buckets[0] = 98; // 0 ms
    wait.buckets[7] = 2;  // up to 100 ms
    CHECK(wait.count() == 100);
    CHECK(wait.quantile_ms(0.5) == 0);
    CHECK(wait.quantile_ms(0.98) == 0);
    CHECK(wait.quantile_ms(0.99) == 100);
    wait.buckets.back() = 1000; // past the last bound
    CHECK(wait.quantile_ms(0.99) == wait_bounds_ms().back());
}

TEST_CASE("status: JSON strings and Prometheus label values are escaped", "[status]") {
    std::string json;
    append_json_escaped(json, "a\"b\\c\nd\x01");
    CHECK(json == "a\\\"b\\\\c\\u000ad\\u0001");
    std::string label;
    append_label_escaped(label, "unix:/run/\"x\"\\y\nz");
    CHECK(label == "unix:/run/\\\"x\\\"\\\\y\\nz");
}

TEST_CASE("status: the text begins with nginx's stub_status lines exactly", "[status]") {
    Figures f;
    f.total.accepted = 7;
    f.total.handled = 7;
    f.total.active = 3;
    f.total.reading = 1;
    f.total.writing = 1;
    f.total.waiting = 1;
    f.total.requests[2] = 10;
    f.total.requests[4] = 2;
    const std::string text = render_text(f);
    CHECK(text.rfind("Active connections: 3 \nserver accepts handled requests\n 7 7 12 \n"
                     "Reading: 1 Writing: 1 Waiting: 1 \n",
                     0) == 0);
}
