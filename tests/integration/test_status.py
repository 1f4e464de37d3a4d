#!/usr/bin/env python3
"""The status handler: nginx's stub_status lines, JSON and Prometheus's
exposition, whose numbers move exactly as a known load says, summed over
two loops; the formats by ?format= and Accept; counters through a SIGHUP
reload; an upstream's queue.

    test_status.py WEFT_BINARY
"""
import json
import os
import signal
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, curl, get, io_backend_running, wait_for  # noqa: E402
from php_support import PhpTestCase, install_fixtures  # noqa: E402
from status_support import STUB_STATUS, parse_exposition, total  # noqa: E402

CONF = """\
threads = 2
listener 127.0.0.1:{port}
upstream php {
    server = unix:{dir}/php/php.sock
}
upstream narrow {
    server = unix:{dir}/php/php.sock
    max_conns = 1
}
site {
    root = {dir}/www
    response /hello {
        body = "hello"
    }
    response /secret {
        allow_from = 10.9.9.9
        deny_from = all
        body = "secret"
    }
    status /status {
        allow_from = 127.0.0.1
        deny_from = all
    }
    status /metrics {
        format = prometheus
    }
    fastcgi /narrow {
        upstream = narrow
    }
    fastcgi /app {
        upstream = php
    }
}
"""

CLASSES = ("1xx", "2xx", "3xx", "4xx", "5xx")


class Status(PhpTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {
            "app/hello.php": b'<?php echo "php hello";\n',
            "narrow/hold.php": "hold.php",
        })

    def status_json(self):
        r = curl(self.port, "/status?format=json")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("Content-Type"), "application/json")
        self.assertEqual(r.header("Cache-Control"), "no-store")
        return json.loads(r.body)

    def load(self, n=5):
        """n requests of each kind, each on its own connection: 200, 404,
        403 (allow_from), and a PHP page through upstream php."""
        for _ in range(n):
            self.assertEqual(curl(self.port, "/hello").status, 200)
            self.assertEqual(curl(self.port, "/nothing/here").status, 404)
            self.assertEqual(curl(self.port, "/secret").status, 403)
            r = curl(self.port, "/app/hello.php")
            self.assertEqual((r.status, r.body), (200, b"php hello"))
        return 4 * n

    def settled(self):
        """Status once every earlier connection has closed on weft's side
        (the client's close reaches it a moment later): active is this
        status request's own."""
        box = {}

        def quiet():
            box["s"] = self.status_json()
            return box["s"]["connections"]["active"] == 1
        self.assertTrue(wait_for(quiet, 10.0), box.get("s"))
        return box["s"]

    def test_known_load_moves_the_numbers_exactly(self):
        before = self.settled()
        n = 5
        connections = self.load(n)
        after = self.settled()
        # Each status read is a 2xx when the next one reads; settled() may
        # have read more than once: count them from accepted.
        status_reads = after["connections"]["accepted"] - before["connections"]["accepted"] \
            - connections
        self.assertGreaterEqual(status_reads, 1)
        req = {k: after["requests"][k] - before["requests"][k] for k in (*CLASSES, "total")}
        self.assertEqual(req["2xx"], 2 * n + status_reads - 0, req)
        self.assertEqual(req["4xx"], 2 * n, req)
        self.assertEqual((req["1xx"], req["3xx"], req["5xx"]), (0, 0, 0), req)
        self.assertEqual(req["total"], 4 * n + status_reads, req)
        self.assertEqual(after["connections"]["handled"] - before["connections"]["handled"],
                         connections + status_reads)
        # Two loops, and the totals are their sums.
        self.assertEqual(len(after["loops"]), 2)
        for key in ("accepted", "handled", "active", "reading", "writing", "waiting"):
            self.assertEqual(sum(l["connections"][key] for l in after["loops"]),
                             after["connections"][key], key)
        for key in (*CLASSES, "total"):
            self.assertEqual(sum(l["requests"][key] for l in after["loops"]),
                             after["requests"][key], key)
        self.assertEqual(after["connections"]["writing"], 1)  # this request
        self.assertGreater(after["body_bytes_sent"], before["body_bytes_sent"])
        # The PHP requests went through upstream php, one each, no failure.
        up = {u["name"]: u for u in after["upstreams"]}
        up_before = {u["name"]: u for u in before["upstreams"]}
        php, php_before = up["php"], up_before.get("php", {"requests": 0, "failures": 0})
        self.assertEqual(php["requests"] - php_before["requests"], n)
        self.assertEqual(php["failures"], 0)
        self.assertEqual(php["servers"], [{"address": f"unix:{self.dir}/php/php.sock",
                                           "state": "up", "failures": 0}])
        self.assertLessEqual(php["busy"] + php["idle"], php["open"] + 0)
        self.assertEqual(php["queued"], 0)
        self.assertEqual(sum(b["count"] for b in php["queue_wait_ms"]["buckets"]),
                         php["queue_wait_ms"]["count"])
        self.assertEqual(php["queue_wait_ms"]["count"], php["requests"])
        self.assertTrue(after["version"] and after["compiler"])
        self.assertEqual(after["io_backend"], io_backend_running())

    def test_stub_status_lines_as_nginx_prints_them(self):
        before = self.settled()
        r = curl(self.port, "/status")  # curl's Accept: */* gets the default, text
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("Content-Type"), "text/plain; charset=utf-8")
        self.assertEqual(r.header("Cache-Control"), "no-store")
        text = r.body.decode()
        m = STUB_STATUS.match(text)
        self.assertIsNotNone(m, text)
        active, accepted, handled, requests, reading, writing, waiting = map(int, m.groups())
        self.assertEqual(accepted, before["connections"]["accepted"] + 1)
        self.assertEqual(handled, accepted)
        self.assertEqual(requests, before["requests"]["total"] + 1)
        self.assertEqual((active, reading, writing, waiting), (1, 0, 1, 0))
        self.assertIn("\nweft ", text)

    def test_prometheus_exposition_parses_strictly_and_agrees(self):
        self.load(2)
        s = self.settled()
        r = curl(self.port, "/status?format=prometheus")
        self.assertEqual(r.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
        fams = parse_exposition(r.body.decode())
        # What JSON said a request before, plus that request.
        self.assertEqual(total(fams, "weft_requests_total"), s["requests"]["total"] + 1)
        self.assertEqual(total(fams, "weft_requests_total", **{"class": "4xx"}),
                         s["requests"]["4xx"])
        self.assertEqual(total(fams, "weft_connections_accepted_total"),
                         s["connections"]["accepted"] + 1)
        self.assertEqual(fams["weft_connections_accepted_total"]["type"], "counter")
        self.assertEqual(fams["weft_upstream_queue_wait_seconds"]["type"], "histogram")
        self.assertEqual(total(fams, "weft_upstream_requests_total", upstream="php"),
                         {u["name"]: u for u in s["upstreams"]}["php"]["requests"])
        self.assertEqual(total(fams, "weft_upstream_server_up", upstream="php"), 1)
        self.assertEqual(len({l["loop"] for _, l, _ in
                              fams["weft_connections_accepted_total"]["samples"]}), 2)
        self.assertEqual(fams["weft_build_info"]["samples"][0][1]["io_backend"],
                         io_backend_running())
        # A Prometheus scraper's own Accept, and a handler whose default it is.
        scraper = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                   "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
        for path, args in (("/status", ("-H", f"Accept: {scraper}")), ("/metrics", ())):
            r = curl(self.port, path, *args)
            self.assertEqual(r.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8")
            parse_exposition(r.body.decode())

    def test_the_format_by_query_and_accept(self):
        cases = [
            ("/status", ("-H", "Accept: application/json"), "application/json"),
            ("/status", ("-H", "Accept: text/html,application/xhtml+xml,*/*;q=0.8"),
             "text/html; charset=utf-8"),
            ("/status", ("-H", "Accept: text/plain"), "text/plain; charset=utf-8"),
            ("/status", (), "text/plain; charset=utf-8"),
            ("/status?format=html", ("-H", "Accept: application/json"),
             "text/html; charset=utf-8"),
            ("/status?x=1&format=json", (), "application/json"),
            ("/status", ("-H", "Accept: application/json;q=0.1, text/plain;q=0.9"),
             "text/plain; charset=utf-8"),
        ]
        for path, args, content_type in cases:
            with self.subTest(path=path, args=args):
                r = curl(self.port, path, *args)
                self.assertEqual(r.status, 200)
                self.assertEqual(r.header("Content-Type"), content_type)
                self.assertEqual(r.header("Cache-Control"), "no-store")
                self.assertEqual(r.header("Vary"), "Accept")
        self.assertEqual(curl(self.port, "/status?format=xml").status, 400)
        r = curl(self.port, "/status", "-X", "POST")
        self.assertEqual((r.status, r.header("Allow")), (405, "GET, HEAD"))
        page = curl(self.port, "/status?format=html").body.decode()
        self.assertIn("?format=json", page)
        self.assertNotIn("http://", page.replace("http://www.w3.org", ""))  # nothing fetched elsewhere

    def test_idle_and_half_sent_connections_are_waiting_and_reading(self):
        self.settled()
        idle = []
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            self.addCleanup(s.close)
            s.sendall(get("/hello").encode())
            self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 200"))
            idle.append(s)
        half = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        self.addCleanup(half.close)
        half.sendall(b"GET /hello HTTP/1.1\r\nHost: a\r\n")
        box = {}

        def seen():
            box["c"] = self.status_json()["connections"]
            return box["c"]["waiting"] == 3 and box["c"]["reading"] == 1
        self.assertTrue(wait_for(seen, 10.0), box.get("c"))
        self.assertEqual(box["c"]["active"], 5)
        self.assertEqual(box["c"]["writing"], 1)
        for s in idle:
            s.close()
        half.close()
        self.settled()

    def test_an_upstream_queue_shows_and_its_wait_is_counted(self):
        def narrow():
            return {u["name"]: u for u in self.status_json()["upstreams"]}.get(
                "narrow", {"requests": 0, "queued_total": 0, "failures": 0})
        before = narrow()
        results = []

        def fetch(i):
            results.append(curl(self.port, f"/narrow/hold.php?id=q{i}").status)
        threads = [threading.Thread(target=fetch, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        box = {}

        def queued():
            box["u"] = narrow()
            return box["u"]["queued"] == 2 and box["u"]["busy"] == 1
        ok = wait_for(queued, 10.0)
        for i in range(3):
            self.marks.release(f"q{i}")
        for t in threads:
            t.join(20)
        self.assertTrue(ok, box.get("u"))
        self.assertEqual(results, [200, 200, 200])
        after = narrow()
        self.assertEqual(after["requests"] - before["requests"], 3)
        self.assertEqual(after["queued_total"] - before["queued_total"], 2)
        self.assertEqual(after["failures"], 0)
        self.assertEqual(after["max_conns"], 1)
        # Two of three waited for the first to end: the p99 is not 0 ms.
        self.assertGreater(after["queue_wait_ms"]["p99"], 0)

    def test_counters_survive_a_reload(self):
        self.load(1)
        before = self.settled()
        err = len(self.weft.stderr())
        self.weft.process.send_signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: "reloaded" in self.weft.stderr()[err:], 15.0),
                        self.weft.stderr()[err:])
        after = self.settled()
        self.assertEqual(after["reloads"], before["reloads"] + 1)
        for key in ("accepted", "handled"):
            self.assertGreater(after["connections"][key], before["connections"][key])
        self.assertEqual(after["requests"]["4xx"], before["requests"]["4xx"])
        self.assertEqual(after["requests"]["2xx"] - before["requests"]["2xx"],
                         after["connections"]["accepted"] - before["connections"]["accepted"])
        php = {u["name"]: u for u in after["upstreams"]}["php"]
        self.assertGreaterEqual(php["requests"],
                                {u["name"]: u for u in before["upstreams"]}["php"]["requests"])
        self.assertGreaterEqual(after["uptime_seconds"], before["uptime_seconds"])



class TimedOutHeads(ServerTestCase):
    """A head that never completes gets 408 from weft itself: a request that
    ended without a handler, counted as begun too, so "writing" (begun and
    not ended) stays true."""
    CONF = """\
threads = 2
request_timeout = 1s
listener 127.0.0.1:{port}
site {
    status /status {
    }
}
"""

    def status(self):
        return json.loads(curl(self.port, "/status?format=json").body)

    def test_a_408_is_a_4xx_and_leaves_nothing_writing(self):
        before = self.status()
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            self.addCleanup(s.close)
            s.sendall(b"GET /status HTTP/1.1\r\nHost: a\r\n")
            self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 408"))
        # One kept alive and idle: waiting, not writing.
        idle = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        self.addCleanup(idle.close)
        idle.sendall(get("/status").encode())
        self.assertTrue(idle.recv(4096).startswith(b"HTTP/1.1 200"))
        box = {}

        def settled():
            box["s"] = self.status()
            return box["s"]["connections"]["active"] == 2
        self.assertTrue(wait_for(settled, 10.0), box.get("s"))
        after = box["s"]
        self.assertEqual(after["requests"]["4xx"] - before["requests"]["4xx"], 3)
        self.assertEqual(after["connections"]["writing"], 1)  # this request alone
        self.assertEqual(after["connections"]["waiting"], 1)
        self.assertEqual(after["connections"]["reading"], 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
