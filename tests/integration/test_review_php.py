#!/usr/bin/env python3
"""Review of the FastCGI hardening (a708439..42ea49c): what a hostile review
found, each against a scripted FastCGI backend that answers as PHP-FPM does.

- HEAD of a script: PHP sends no body for HEAD and no Content-Length, and
  weft then announced "Content-Length: 0" where the GET says 11 (RFC 9110
  §9.3.2: the same fields as GET, or none).
- The stall rule (upstream.hpp, kStallMs) thrashes: with a pool that has a
  child for every connection (nothing ever waits in a backlog) and pages
  that take 150 ms, every new connection counts as stalled, and while one
  is, every freed connection is closed: keep-alive is lost for any
  application slower than 100 ms (46 connections for 60 requests).
- A backup next to a script (x.php.old) is served as its source, though
  .bak, .orig, .save and ~ are refused.
- A local redirect (Location: /path, no Status) is resolved in the
  handler's root whatever handler the path routes to: a script under a
  `files /uploads` prefix, 403 when asked for, runs when a script of the
  application redirects to it (an open redirect is enough).

    test_review_php.py WEFT_BINARY
"""
import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase  # noqa: E402
from test_fastcgi_faults import STDOUT, Backend, end_request, record  # noqa: E402

CONF = """\
threads = 1
listener 127.0.0.1:{port}
upstream slow {
    server = unix:{dir}/slow.sock
    max_conns = 4
    keepalive = 8
}
site {
    root = {dir}/www
    files /uploads {
    }
    fastcgi /slow {
        upstream = slow
    }
    fastcgi / {
        pass = unix:{dir}/php.sock
    }
}
"""

SOURCE = "<?php $password = 'TOP SECRET';\n"


def like_php(request_id, params):
    """As PHP-FPM answers `echo 'hello world';`: no body for HEAD, and no
    Content-Length either way. /go.php redirects where its query says, and
    no Status (an open redirect); /uploads/* say that they ran."""
    if params["SCRIPT_NAME"] == "/go.php":
        head = b"Location: " + params["QUERY_STRING"].encode() + b"\r\n\r\n"
        return record(STDOUT, request_id, head) + end_request(request_id)
    if params["SCRIPT_NAME"].startswith("/uploads/"):
        return record(STDOUT, request_id, b"\r\nRAN") + end_request(request_id)
    body = b"" if params["REQUEST_METHOD"] == "HEAD" else b"hello world"
    return (record(STDOUT, request_id, b"Content-type: text/html\r\n\r\n" + body)
            + record(STDOUT, request_id) + end_request(request_id))


def slow_page(request_id, params):
    time.sleep(0.15)  # a page of a real application: slower than kStallMs
    return record(STDOUT, request_id, b"\r\nok") + end_request(request_id)


class ReviewPhp(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        os.makedirs(os.path.join(dir, "www", "slow"))
        os.makedirs(os.path.join(dir, "www", "uploads"))
        for name in ("hello.php", "x.php", "x.php.old", "slow/page.php", "go.php",
                     "uploads/evil.php"):
            with open(os.path.join(dir, "www", name), "w") as f:
                f.write(SOURCE)
        cls.php = Backend(os.path.join(dir, "php.sock"), like_php)
        cls.slow = Backend(os.path.join(dir, "slow.sock"), slow_page)

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.php.close()
            cls.slow.close()

    def test_head_of_a_script_does_not_announce_an_empty_body(self):
        c, get = self.roundtrip("GET /hello.php HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual((get.status, get.body), (200, b"hello world"), get)
        c = self.connect()
        c.send("HEAD /hello.php HTTP/1.1\r\nHost: a\r\n\r\n")
        head = c.response(head=True, require_length=False)
        self.assertEqual(head.status, 200, head)
        self.assertIn(head.header("content-length"), (None, get.header("content-length")),
                      "HEAD announces a length the GET does not have")

    def test_pages_slower_than_the_stall_time_keep_their_connections(self):
        # 4 clients, 15 requests each, max_conns 4, a backend that accepts
        # every connection at once (no backlog): 4 connections are enough.
        before = self.slow.connections
        failures = []

        def client():
            s = socket.create_connection(("127.0.0.1", self.port), 10)
            with s:
                for _ in range(15):
                    s.sendall(b"GET /slow/page.php HTTP/1.1\r\nHost: a\r\n\r\n")
                    got = b""
                    while not got.endswith(b"ok"):
                        data = s.recv(4096)
                        if not data:
                            failures.append(got)
                            return
                        got += data

        threads = [threading.Thread(target=client) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(failures, [])
        opened = self.slow.connections - before
        self.assertLessEqual(opened, 8, f"{opened} connections for 60 requests")

    def test_a_backup_of_a_script_is_not_served_as_its_source(self):
        c, r = self.roundtrip("GET /x.php.old HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertNotIn(b"TOP SECRET", r.body, r)

    def test_a_local_redirect_runs_no_script_its_path_does_not_route_to(self):
        c, r = self.roundtrip("GET /uploads/evil.php HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual(r.status, 403, r)
        c, r = self.roundtrip("GET /go.php?/uploads/evil.php HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertNotEqual(r.body, b"RAN", "an upload ran through a local redirect")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
