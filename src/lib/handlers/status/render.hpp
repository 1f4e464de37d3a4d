#pragma once
// The figures as each format writes them.
//
// text: nginx's stub_status lines first, exactly (so its readers read it),
//   then weft's own lines.
// json: one object (docs/architecture.md, "Status").
// prometheus: the text exposition format 0.0.4: HELP and TYPE before each
//   family, counters named *_total, one series per loop (sum() adds them).
// html: a page that draws the JSON (page.cpp).

#include "handlers/status/figures.hpp"

#include <string>
#include <string_view>

namespace weft::handlers::status {

std::string render_text(const Figures& figures);
std::string render_json(const Figures& figures);
std::string render_prometheus(const Figures& figures);
// The page; it fetches `?format=json` from its own path every second.
std::string_view html_page();

// `text` as a JSON string's contents, and as a Prometheus label value's
// (backslash, double quote and newline escaped).
void append_json_escaped(std::string& out, std::string_view text);
void append_label_escaped(std::string& out, std::string_view text);

} // namespace weft::handlers::status
