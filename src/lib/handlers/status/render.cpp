#include "handlers/status/render.hpp"

#include <cstdio>

namespace weft::handlers::status {

namespace {

constexpr const char* kClassNames[] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};

void append_number(std::string& out, std::uint64_t n) {
    out += std::to_string(n);
}

// --- text ----------------------------------------------------------------------

void append_line(std::string& out, const char* format, auto... values) {
    char line[256];
    const int n = std::snprintf(line, sizeof line, format, values...);
    if (n > 0)
        out.append(line, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof line - 1));
}

using ull = unsigned long long;

void append_connections(std::string& out, const ConnectionFigures& f) {
    append_line(out,
                "accepted %llu handled %llu active %llu reading %llu writing %llu waiting %llu "
                "requests %llu",
                ull(f.accepted), ull(f.handled), ull(f.active), ull(f.reading), ull(f.writing),
                ull(f.waiting), ull(f.requests_total()));
    for (std::size_t i = 1; i < f.requests.size(); ++i)
        append_line(out, " %s %llu", kClassNames[i], ull(f.requests[i]));
    append_line(out, " other %llu body_bytes_sent %llu\n", ull(f.requests[0]),
                ull(f.body_bytes_sent));
}

// --- JSON ----------------------------------------------------------------------

void key(std::string& out, std::string_view name) {
    if (out.back() != '{' && out.back() != '[') out += ',';
    out += '"';
    out += name;
    out += "\":";
}

void number(std::string& out, std::string_view name, std::uint64_t n) {
    key(out, name);
    append_number(out, n);
}

void string(std::string& out, std::string_view name, std::string_view text) {
    key(out, name);
    out += '"';
    append_json_escaped(out, text);
    out += '"';
}

void json_connections(std::string& out, const ConnectionFigures& f) {
    key(out, "connections");
    out += '{';
    number(out, "accepted", f.accepted);
    number(out, "handled", f.handled);
    number(out, "active", f.active);
    number(out, "reading", f.reading);
    number(out, "writing", f.writing);
    number(out, "waiting", f.waiting);
    out += '}';
    key(out, "requests");
    out += '{';
    number(out, "total", f.requests_total());
    for (std::size_t i = 1; i < f.requests.size(); ++i) number(out, kClassNames[i], f.requests[i]);
    number(out, "other", f.requests[0]);
    out += '}';
    number(out, "body_bytes_sent", f.body_bytes_sent);
}

void json_upstream_loop(std::string& out, const UpstreamLoopFigures& f) {
    number(out, "requests", f.acquired);
    number(out, "queued_total", f.waited);
    number(out, "failures", f.failures);
    key(out, "queue_wait_ms");
    out += '{';
    number(out, "p50", f.wait.quantile_ms(0.5));
    number(out, "p99", f.wait.quantile_ms(0.99));
    number(out, "count", f.wait.count());
    number(out, "sum", f.wait.sum_ms);
    key(out, "buckets");
    out += '[';
    const std::vector<std::uint64_t> bounds = wait_bounds_ms();
    for (std::size_t i = 0; i < f.wait.buckets.size(); ++i) {
        if (i) out += ',';
        out += "{\"le\":";
        if (i < bounds.size())
            append_number(out, bounds[i]);
        else
            out += "null";
        out += ",\"count\":";
        append_number(out, f.wait.buckets[i]);
        out += '}';
    }
    out += "]}";
}

// --- Prometheus ----------------------------------------------------------------

struct Family {
    const char* name;
    const char* type;
    const char* help;
};

void family(std::string& out, const Family& f) {
    out += "# HELP ";
    out += f.name;
    out += ' ';
    out += f.help;
    out += "\n# TYPE ";
    out += f.name;
    out += ' ';
    out += f.type;
    out += '\n';
}

// name{labels} value: labels as `k="v"` pairs, values escaped.
void sample(std::string& out, std::string_view name,
            std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
            std::string_view value) {
    out += name;
    if (labels.size()) {
        out += '{';
        bool first = true;
        for (const auto& [k, v] : labels) {
            if (!first) out += ',';
            first = false;
            out += k;
            out += "=\"";
            append_label_escaped(out, v);
            out += '"';
        }
        out += '}';
    }
    out += ' ';
    out += value;
    out += '\n';
}

std::string seconds(std::uint64_t ms) {
    char text[32];
    std::snprintf(text, sizeof text, "%llu.%03llu", ull(ms / 1000), ull(ms % 1000));
    return text;
}

} // namespace

void append_json_escaped(std::string& out, std::string_view text) {
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\u%04x", u);
            out += escape;
        } else {
            out += c;
        }
    }
}

void append_label_escaped(std::string& out, std::string_view text) {
    for (const char c : text) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
}

std::string render_text(const Figures& f) {
    std::string out;
    const ConnectionFigures& t = f.total;
    // nginx's stub_status, byte for byte (its trailing spaces included).
    append_line(out, "Active connections: %llu \n", ull(t.active));
    out += "server accepts handled requests\n";
    append_line(out, " %llu %llu %llu \n", ull(t.accepted), ull(t.handled),
                ull(t.requests_total()));
    append_line(out, "Reading: %llu Writing: %llu Waiting: %llu \n", ull(t.reading), ull(t.writing),
                ull(t.waiting));
    append_line(out, "weft %s (%s, io_backend %s) up %llu s, %llu reloads\n", f.version.c_str(),
                f.compiler.c_str(), f.io_backend.c_str(), ull(f.uptime_seconds), ull(f.reloads));
    out += "all loops: ";
    append_connections(out, t);
    for (const LoopFigures& loop : f.loops) {
        append_line(out, "loop %u: ", loop.index);
        append_connections(out, loop.figures);
    }
    for (const UpstreamFigures& u : f.upstreams) {
        out += "upstream ";
        out += u.name;
        append_line(out,
                    ": open %u idle %u busy %u queued %u max_conns %u requests %llu "
                    "queued_total %llu failures %llu queue_wait_ms p50 %llu p99 %llu\n",
                    u.open, u.idle, u.busy, u.queued, u.max_conns, ull(u.total.acquired),
                    ull(u.total.waited), ull(u.total.failures), ull(u.total.wait.quantile_ms(0.5)),
                    ull(u.total.wait.quantile_ms(0.99)));
        for (const ServerFigures& s : u.servers) {
            out += "  server ";
            out += s.address;
            append_line(out, ": %s failures %llu\n", s.up ? "up" : "down", ull(s.failures));
        }
    }
    return out;
}

std::string render_json(const Figures& f) {
    std::string out = "{";
    string(out, "version", f.version);
    string(out, "compiler", f.compiler);
    string(out, "io_backend", f.io_backend);
    number(out, "uptime_seconds", f.uptime_seconds);
    number(out, "started", f.started_unix);
    number(out, "reloads", f.reloads);
    json_connections(out, f.total);
    key(out, "loops");
    out += '[';
    for (const LoopFigures& loop : f.loops) {
        out += out.back() == '[' ? "{" : ",{";
        number(out, "index", loop.index);
        json_connections(out, loop.figures);
        out += '}';
    }
    out += ']';
    key(out, "upstreams");
    out += '[';
    for (const UpstreamFigures& u : f.upstreams) {
        out += out.back() == '[' ? "{" : ",{";
        string(out, "name", u.name);
        number(out, "open", u.open);
        number(out, "idle", u.idle);
        number(out, "busy", u.busy);
        number(out, "queued", u.queued);
        number(out, "max_conns", u.max_conns);
        json_upstream_loop(out, u.total);
        key(out, "loops");
        out += '[';
        for (const UpstreamLoopFigures& loop : u.loops) {
            out += out.back() == '[' ? "{" : ",{";
            number(out, "index", loop.index);
            json_upstream_loop(out, loop);
            out += '}';
        }
        out += ']';
        key(out, "servers");
        out += '[';
        for (const ServerFigures& s : u.servers) {
            out += out.back() == '[' ? "{" : ",{";
            string(out, "address", s.address);
            string(out, "state", s.up ? "up" : "down");
            number(out, "failures", s.failures);
            out += '}';
        }
        out += "]}";
    }
    out += "]}\n";
    return out;
}

std::string render_prometheus(const Figures& f) {
    std::string out;
    auto per_loop = [&](const Family& fam, auto value) {
        family(out, fam);
        for (const LoopFigures& loop : f.loops)
            sample(out, fam.name, {{"loop", std::to_string(loop.index)}},
                   std::to_string(value(loop.figures)));
    };
    per_loop({"weft_connections_accepted_total", "counter", "Connections accepted."},
             [](const ConnectionFigures& c) { return c.accepted; });
    per_loop({"weft_connections_handled_total", "counter", "Connections given to a handler."},
             [](const ConnectionFigures& c) { return c.handled; });
    per_loop({"weft_connections_active", "gauge", "Connections open."},
             [](const ConnectionFigures& c) { return c.active; });
    family(out, {"weft_connections", "gauge",
                 "Open connections by state: reading a head, writing (a request in "
                 "progress), waiting (idle between requests)."});
    for (const LoopFigures& loop : f.loops) {
        const std::string index = std::to_string(loop.index);
        sample(out, "weft_connections", {{"loop", index}, {"state", "reading"}},
               std::to_string(loop.figures.reading));
        sample(out, "weft_connections", {{"loop", index}, {"state", "writing"}},
               std::to_string(loop.figures.writing));
        sample(out, "weft_connections", {{"loop", index}, {"state", "waiting"}},
               std::to_string(loop.figures.waiting));
    }
    family(out, {"weft_requests_total", "counter", "Requests answered, by status class."});
    for (const LoopFigures& loop : f.loops) {
        const std::string index = std::to_string(loop.index);
        for (std::size_t i = 1; i < loop.figures.requests.size(); ++i)
            sample(out, "weft_requests_total", {{"loop", index}, {"class", kClassNames[i]}},
                   std::to_string(loop.figures.requests[i]));
        sample(out, "weft_requests_total", {{"loop", index}, {"class", "other"}},
               std::to_string(loop.figures.requests[0]));
    }
    per_loop({"weft_body_bytes_sent_total", "counter", "Response body bytes sent."},
             [](const ConnectionFigures& c) { return c.body_bytes_sent; });

    family(out, {"weft_upstream_connections", "gauge",
                 "Connections to an upstream's servers: open, idle, busy."});
    for (const UpstreamFigures& u : f.upstreams) {
        sample(out, "weft_upstream_connections", {{"upstream", u.name}, {"state", "open"}},
               std::to_string(u.open));
        sample(out, "weft_upstream_connections", {{"upstream", u.name}, {"state", "idle"}},
               std::to_string(u.idle));
        sample(out, "weft_upstream_connections", {{"upstream", u.name}, {"state", "busy"}},
               std::to_string(u.busy));
    }
    family(out, {"weft_upstream_max_conns", "gauge", "An upstream's max_conns."});
    for (const UpstreamFigures& u : f.upstreams)
        sample(out, "weft_upstream_max_conns", {{"upstream", u.name}}, std::to_string(u.max_conns));
    family(out, {"weft_upstream_queued", "gauge", "Requests waiting for a connection now."});
    for (const UpstreamFigures& u : f.upstreams)
        sample(out, "weft_upstream_queued", {{"upstream", u.name}}, std::to_string(u.queued));
    auto per_upstream_loop = [&](const Family& fam, auto value) {
        family(out, fam);
        for (const UpstreamFigures& u : f.upstreams)
            for (const UpstreamLoopFigures& loop : u.loops)
                sample(out, fam.name, {{"upstream", u.name}, {"loop", std::to_string(loop.index)}},
                       std::to_string(value(loop)));
    };
    per_upstream_loop(
        {"weft_upstream_requests_total", "counter", "Requests given a connection to an upstream."},
        [](const UpstreamLoopFigures& l) { return l.acquired; });
    per_upstream_loop({"weft_upstream_queued_requests_total", "counter",
                       "Requests that waited in an upstream's queue."},
                      [](const UpstreamLoopFigures& l) { return l.waited; });
    per_upstream_loop({"weft_upstream_failures_total", "counter",
                       "Requests given no connection (no server, connect timeout, queue "
                       "timeout)."},
                      [](const UpstreamLoopFigures& l) { return l.failures; });
    family(out, {"weft_upstream_queue_wait_seconds", "histogram",
                 "Time from asking for a connection to being handed one."});
    const std::vector<std::uint64_t> bounds = wait_bounds_ms();
    for (const UpstreamFigures& u : f.upstreams) {
        for (const UpstreamLoopFigures& loop : u.loops) {
            const std::string index = std::to_string(loop.index);
            std::uint64_t cumulative = 0;
            for (std::size_t i = 0; i < loop.wait.buckets.size(); ++i) {
                cumulative += loop.wait.buckets[i];
                const std::string le = i < bounds.size() ? seconds(bounds[i]) : "+Inf";
                sample(out, "weft_upstream_queue_wait_seconds_bucket",
                       {{"upstream", u.name}, {"loop", index}, {"le", le}},
                       std::to_string(cumulative));
            }
            sample(out, "weft_upstream_queue_wait_seconds_sum",
                   {{"upstream", u.name}, {"loop", index}}, seconds(loop.wait.sum_ms));
            sample(out, "weft_upstream_queue_wait_seconds_count",
                   {{"upstream", u.name}, {"loop", index}}, std::to_string(cumulative));
        }
    }
    family(out, {"weft_upstream_queue_wait_quantile_seconds", "gauge",
                 "Queue wait quantiles over all loops since start (the bound of the "
                 "histogram bucket that holds them)."});
    for (const UpstreamFigures& u : f.upstreams) {
        sample(out, "weft_upstream_queue_wait_quantile_seconds",
               {{"upstream", u.name}, {"quantile", "0.5"}}, seconds(u.total.wait.quantile_ms(0.5)));
        sample(out, "weft_upstream_queue_wait_quantile_seconds",
               {{"upstream", u.name}, {"quantile", "0.99"}},
               seconds(u.total.wait.quantile_ms(0.99)));
    }
    family(out, {"weft_upstream_server_up", "gauge",
                 "1 while an upstream's server is tried, 0 while skipped after a failure."});
    for (const UpstreamFigures& u : f.upstreams)
        for (const ServerFigures& s : u.servers)
            sample(out, "weft_upstream_server_up", {{"upstream", u.name}, {"server", s.address}},
                   s.up ? "1" : "0");
    family(out, {"weft_upstream_server_failures_total", "counter",
                 "Connects to an upstream's server that failed."});
    for (const UpstreamFigures& u : f.upstreams)
        for (const ServerFigures& s : u.servers)
            sample(out, "weft_upstream_server_failures_total",
                   {{"upstream", u.name}, {"server", s.address}}, std::to_string(s.failures));

    family(out, {"weft_uptime_seconds", "gauge", "Seconds since weft started."});
    sample(out, "weft_uptime_seconds", {}, std::to_string(f.uptime_seconds));
    family(out, {"weft_start_time_seconds", "gauge", "When weft started, in Unix time."});
    sample(out, "weft_start_time_seconds", {}, std::to_string(f.started_unix));
    family(out, {"weft_reloads_total", "counter", "Configuration reloads taken."});
    sample(out, "weft_reloads_total", {}, std::to_string(f.reloads));
    family(out, {"weft_build_info", "gauge", "The build: version, compiler, I/O backend."});
    sample(out, "weft_build_info",
           {{"version", f.version}, {"compiler", f.compiler}, {"io_backend", f.io_backend}}, "1");
    return out;
}

} // namespace weft::handlers::status
