#include "handlers/status/render.hpp"

#include <cstdio>
#include <functional>
#include <initializer_list>
#include <utility>

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

// "name":[{...},...]: each object's members written by `members`.
template <class Items, class Members>
void array(std::string& out, std::string_view name, const Items& items, Members members) {
    key(out, name);
    out += '[';
    for (const auto& item : items) {
        out += out.back() == '[' ? "{" : ",{";
        members(item);
        out += '}';
    }
    out += ']';
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

using Label = std::pair<std::string_view, std::string_view>;
using Labels = std::initializer_list<Label>;

// name{labels} value: the series' labels (`where`: its loop, its upstream)
// then the family's own (`what`), as `k="v"` pairs, values escaped.
void sample(std::string& out, std::string_view name, Labels where, Labels what,
            std::string_view value) {
    out += name;
    bool first = true;
    for (const Labels list : {where, what}) {
        for (const auto& [k, v] : list) {
            out += first ? '{' : ',';
            first = false;
            out += k;
            out += "=\"";
            append_label_escaped(out, v);
            out += '"';
        }
    }
    if (!first) out += '}';
    out += ' ';
    out += value;
    out += '\n';
}

// What a family's value function gets to write its samples with.
using Emit = const std::function<void(Labels, const std::string&)>&;

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
    array(out, "loops", f.loops, [&](const LoopFigures& loop) {
        number(out, "index", loop.index);
        json_connections(out, loop.figures);
    });
    array(out, "upstreams", f.upstreams, [&](const UpstreamFigures& u) {
        string(out, "name", u.name);
        number(out, "open", u.open);
        number(out, "idle", u.idle);
        number(out, "busy", u.busy);
        number(out, "queued", u.queued);
        number(out, "max_conns", u.max_conns);
        json_upstream_loop(out, u.total);
        array(out, "loops", u.loops, [&](const UpstreamLoopFigures& loop) {
            number(out, "index", loop.index);
            json_upstream_loop(out, loop);
        });
        array(out, "servers", u.servers, [&](const ServerFigures& server) {
            string(out, "address", server.address);
            string(out, "state", server.up ? "up" : "down");
            number(out, "failures", server.failures);
        });
    });
    out += "}\n";
    return out;
}

std::string render_prometheus(const Figures& f) {
    std::string out;
    auto n = [](std::uint64_t v) { return std::to_string(v); };
    // A family, then value(figures, emit) for each loop, upstream, or
    // upstream on a loop; emit(labels, value) writes one sample.
    auto each_loop = [&](const Family& fam, auto value) {
        family(out, fam);
        for (const LoopFigures& loop : f.loops) {
            const std::string index = n(loop.index);
            value(loop.figures, [&](Labels what, const std::string& v) {
                sample(out, fam.name, {{"loop", index}}, what, v);
            });
        }
    };
    auto each_upstream = [&](const Family& fam, auto value) {
        family(out, fam);
        for (const UpstreamFigures& u : f.upstreams)
            value(u, [&](Labels what, const std::string& v) {
                sample(out, fam.name, {{"upstream", u.name}}, what, v);
            });
    };
    auto each_upstream_loop = [&](const Family& fam, auto value) {
        family(out, fam);
        for (const UpstreamFigures& u : f.upstreams)
            for (const UpstreamLoopFigures& loop : u.loops) {
                const std::string index = n(loop.index);
                sample(out, fam.name, {{"upstream", u.name}, {"loop", index}}, {}, n(value(loop)));
            }
    };

    each_loop({"weft_connections_accepted_total", "counter", "Connections accepted."},
              [&](const ConnectionFigures& c, Emit emit) { emit({}, n(c.accepted)); });
    each_loop({"weft_connections_handled_total", "counter", "Connections given to a handler."},
              [&](const ConnectionFigures& c, Emit emit) { emit({}, n(c.handled)); });
    each_loop({"weft_connections_active", "gauge", "Connections open."},
              [&](const ConnectionFigures& c, Emit emit) { emit({}, n(c.active)); });
    each_loop({"weft_connections", "gauge",
               "Open connections by state: reading a head, writing (a request in progress), "
               "waiting (idle between requests)."},
              [&](const ConnectionFigures& c, Emit emit) {
                  emit({{"state", "reading"}}, n(c.reading));
                  emit({{"state", "writing"}}, n(c.writing));
                  emit({{"state", "waiting"}}, n(c.waiting));
              });
    each_loop({"weft_requests_total", "counter", "Requests answered, by status class."},
              [&](const ConnectionFigures& c, Emit emit) {
                  for (std::size_t i = 1; i < c.requests.size(); ++i)
                      emit({{"class", kClassNames[i]}}, n(c.requests[i]));
                  emit({{"class", "other"}}, n(c.requests[0]));
              });
    each_loop({"weft_body_bytes_sent_total", "counter", "Response body bytes sent."},
              [&](const ConnectionFigures& c, Emit emit) { emit({}, n(c.body_bytes_sent)); });

    each_upstream({"weft_upstream_connections", "gauge",
                   "Connections to an upstream's servers: open, idle, busy."},
                  [&](const UpstreamFigures& u, Emit emit) {
                      emit({{"state", "open"}}, n(u.open));
                      emit({{"state", "idle"}}, n(u.idle));
                      emit({{"state", "busy"}}, n(u.busy));
                  });
    each_upstream({"weft_upstream_max_conns", "gauge", "An upstream's max_conns."},
                  [&](const UpstreamFigures& u, Emit emit) { emit({}, n(u.max_conns)); });
    each_upstream({"weft_upstream_queued", "gauge", "Requests waiting for a connection now."},
                  [&](const UpstreamFigures& u, Emit emit) { emit({}, n(u.queued)); });
    each_upstream_loop(
        {"weft_upstream_requests_total", "counter", "Requests given a connection to an upstream."},
        [](const UpstreamLoopFigures& l) { return l.acquired; });
    each_upstream_loop({"weft_upstream_queued_requests_total", "counter",
                        "Requests that waited in an upstream's queue."},
                       [](const UpstreamLoopFigures& l) { return l.waited; });
    each_upstream_loop(
        {"weft_upstream_failures_total", "counter",
         "Requests given no connection (no server, connect timeout, queue timeout)."},
        [](const UpstreamLoopFigures& l) { return l.failures; });

    constexpr std::string_view kWait = "weft_upstream_queue_wait_seconds";
    family(out,
           {kWait.data(), "histogram", "Time from asking for a connection to being handed one."});
    const std::vector<std::uint64_t> bounds = wait_bounds_ms();
    const std::string bucket = std::string(kWait) + "_bucket";
    for (const UpstreamFigures& u : f.upstreams)
        for (const UpstreamLoopFigures& loop : u.loops) {
            const std::string index = n(loop.index);
            const Labels where = {{"upstream", u.name}, {"loop", index}};
            std::uint64_t cumulative = 0;
            for (std::size_t i = 0; i < loop.wait.buckets.size(); ++i) {
                cumulative += loop.wait.buckets[i];
                const std::string le = i < bounds.size() ? seconds(bounds[i]) : "+Inf";
                sample(out, bucket, where, {{"le", le}}, n(cumulative));
            }
            sample(out, std::string(kWait) + "_sum", where, {}, seconds(loop.wait.sum_ms));
            sample(out, std::string(kWait) + "_count", where, {}, n(cumulative));
        }
    each_upstream({"weft_upstream_queue_wait_quantile_seconds", "gauge",
                   "Queue wait quantiles over all loops since start (the bound of the "
                   "histogram bucket that holds them)."},
                  [&](const UpstreamFigures& u, Emit emit) {
                      emit({{"quantile", "0.5"}}, seconds(u.total.wait.quantile_ms(0.5)));
                      emit({{"quantile", "0.99"}}, seconds(u.total.wait.quantile_ms(0.99)));
                  });
    each_upstream({"weft_upstream_server_up", "gauge",
                   "1 while an upstream's server is tried, 0 while skipped after a failure."},
                  [&](const UpstreamFigures& u, Emit emit) {
                      for (const ServerFigures& server : u.servers)
                          emit({{"server", server.address}}, server.up ? "1" : "0");
                  });
    each_upstream({"weft_upstream_server_failures_total", "counter",
                   "Connects to an upstream's server that failed."},
                  [&](const UpstreamFigures& u, Emit emit) {
                      for (const ServerFigures& server : u.servers)
                          emit({{"server", server.address}}, n(server.failures));
                  });

    auto single = [&](const Family& fam, Labels labels, const std::string& value) {
        family(out, fam);
        sample(out, fam.name, {}, labels, value);
    };
    single({"weft_uptime_seconds", "gauge", "Seconds since weft started."}, {},
           n(f.uptime_seconds));
    single({"weft_start_time_seconds", "gauge", "When weft started, in Unix time."}, {},
           n(f.started_unix));
    single({"weft_reloads_total", "counter", "Configuration reloads taken."}, {}, n(f.reloads));
    single({"weft_build_info", "gauge", "The build: version, compiler, I/O backend."},
           {{"version", f.version}, {"compiler", f.compiler}, {"io_backend", f.io_backend}}, "1");
    return out;
}

} // namespace weft::handlers::status
