// The status page for a browser: one self-contained document (inline CSS
// and script, nothing fetched but this handler's own JSON), which reads
// `?format=json` from its own path every second and draws the figures: the
// totals, requests/s with a sparkline of the last minute, each loop and
// each upstream. A failed fetch shows itself in #state and is retried.

#include "handlers/status/render.hpp"

namespace weft::handlers::status {

namespace {

constexpr std::string_view kPage = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>weft status</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.3em;margin:0 0 .2em}h2{font-size:1.05em;margin:1.2em 0 .3em}
table{border-collapse:collapse;margin:.3em 0}td,th{padding:.15em .7em;text-align:right;border-bottom:1px solid #ddd}
th{background:#eee}td:first-child,th:first-child{text-align:left}
#state{color:#666}#state.error{color:#b00;font-weight:bold}
.big{font-size:1.6em;font-weight:bold}svg{background:#fff;border:1px solid #ddd;vertical-align:middle}
</style></head><body>
<h1>weft status</h1>
<div id="state">loading&hellip;</div>
<p><span class="big" id="requests">-</span> requests,
<span class="big" id="rate">-</span>/s
<svg id="spark" width="240" height="40" viewBox="0 0 240 40"><polyline id="line" fill="none" stroke="#36c" stroke-width="1.5" points=""/></svg></p>
<p id="build"></p>
<h2>Connections</h2><table id="connections"></table>
<h2>Upstreams</h2><table id="upstreams"></table>
<script>
"use strict";
const url = location.pathname + "?format=json";
const rates = [];
let last = null, updates = 0;
function esc(s) { return String(s).replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;","\"":"&quot;"})[c]); }
function row(cells, tag) { return "<tr>" + cells.map(c => "<" + (tag || "td") + ">" + esc(c) + "</" + (tag || "td") + ">").join("") + "</tr>"; }
function draw(s) {
  const now = Date.now();
  if (last) {
    const dt = (now - last.at) / 1000;
    rates.push(dt > 0 ? Math.max(0, (s.requests.total - last.total) / dt) : 0);
    if (rates.length > 60) rates.shift();
  }
  last = {at: now, total: s.requests.total};
  updates++;
  document.getElementById("requests").textContent = s.requests.total;
  document.getElementById("rate").textContent = rates.length ? rates[rates.length - 1].toFixed(1) : "0";
  const max = Math.max(1, ...rates);
  document.getElementById("line").setAttribute("points",
    rates.map((r, i) => (i * 4) + "," + (39 - 38 * r / max).toFixed(1)).join(" "));
  document.getElementById("build").textContent = "weft " + s.version + " (" + s.compiler + ", " +
    s.io_backend + "), up " + s.uptime_seconds + " s, " + s.reloads + " reloads";
  const head = ["", "accepted", "handled", "active", "reading", "writing", "waiting", "requests",
                "1xx", "2xx", "3xx", "4xx", "5xx", "body bytes"];
  const line = (name, c, r, b) => row([name, c.accepted, c.handled, c.active, c.reading, c.writing,
    c.waiting, r.total, r["1xx"], r["2xx"], r["3xx"], r["4xx"], r["5xx"], b]);
  let html = row(head, "th") + line("all", s.connections, s.requests, s.body_bytes_sent);
  for (const l of s.loops) html += line("loop " + l.index, l.connections, l.requests, l.body_bytes_sent);
  document.getElementById("connections").innerHTML = html;
  html = row(["upstream", "open", "idle", "busy", "queued", "max_conns", "requests", "failures",
              "wait p50 ms", "wait p99 ms", "servers"], "th");
  for (const u of s.upstreams)
    html += row([u.name, u.open, u.idle, u.busy, u.queued, u.max_conns, u.requests, u.failures,
                 u.queue_wait_ms.p50, u.queue_wait_ms.p99,
                 u.servers.map(v => v.address + " " + v.state).join(", ")]);
  document.getElementById("upstreams").innerHTML = html;
  const state = document.getElementById("state");
  state.className = "";
  state.textContent = "updated " + new Date(now).toLocaleTimeString() + " (" + updates + ")";
  state.dataset.updates = updates;
}
async function tick() {
  try {
    const r = await fetch(url, {cache: "no-store", headers: {Accept: "application/json"}});
    if (!r.ok) throw new Error("HTTP " + r.status);
    draw(await r.json());
  } catch (e) {
    const state = document.getElementById("state");
    state.className = "error";
    state.textContent = "error: " + e.message;
  }
  setTimeout(tick, 1000);
}
tick();
</script></body></html>
)html";

} // namespace

std::string_view html_page() {
    return kPage;
}

} // namespace weft::handlers::status
