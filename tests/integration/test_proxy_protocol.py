#!/usr/bin/env python3
"""`listener ADDRESS proxy_protocol`: behind the real HAProxy (Debian's
package) with send-proxy-v2 and send-proxy, the access log shows the client
(curl bound to 127.0.0.2), not HAProxy (127.0.0.1); HAProxy's LOCAL health
checks are served as its own; PHP (a real php-fpm8.2) sees the header's client
as REMOTE_ADDR and REMOTE_PORT, and HTTPS=on with REQUEST_SCHEME=https when
v2's SSL TLV says the client spoke TLS; a header split over two writes works; a
connection without a header, or with a broken one, is closed without a
response.

    test_proxy_protocol.py WEFT_BINARY
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, accepts, free_port, read, wait_for  # noqa: E402
from php_support import UPSTREAM_PHP, PhpTestCase, install_fixtures  # noqa: E402

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"

CONF = """\
request_timeout = 1s
access_log = {dir}/access.log
listener 127.0.0.1:{port} proxy_protocol
site {
    root = {dir}/www
    files / {
    }
    files /private {
        deny_from = 192.0.2.66
    }
}
"""

V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"


def v2(command, family, block):
    return V2_SIGNATURE + bytes([command, family, len(block) >> 8, len(block) & 0xFF]) + block


class ProxyProtocol(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        os.makedirs(os.path.join(d, "www"))
        with open(os.path.join(d, "www", "a.txt"), "w") as f:
            f.write("a\n")

    @classmethod
    def setUpClass(cls):
        if not os.access(HAPROXY, os.X_OK):
            raise unittest.SkipTest(f"{HAPROXY} is missing (Debian package haproxy: "
                                    ".ci/install-deps)")
        super().setUpClass()
        cls.v2_port, cls.v1_port = free_port(), free_port()
        cfg = os.path.join(cls.dir, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(f"""\
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend v2
    bind 127.0.0.1:{cls.v2_port}
    default_backend weft_v2
frontend v1
    bind 127.0.0.1:{cls.v1_port}
    default_backend weft_v1
backend weft_v2
    server weft 127.0.0.1:{cls.port} send-proxy-v2 check check-send-proxy inter 200ms
backend weft_v1
    server weft 127.0.0.1:{cls.port} send-proxy
""")
        with open(os.path.join(cls.dir, "haproxy.out"), "wb") as out:
            cls.haproxy = subprocess.Popen([HAPROXY, "-f", cfg, "-db"], stdout=out,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if not wait_for(lambda: accepts(cls.v2_port) and accepts(cls.v1_port), 5.0):
            cls.tearDownClass()
            raise AssertionError("haproxy did not start")

    @classmethod
    def tearDownClass(cls):
        proxy = getattr(cls, "haproxy", None)
        if proxy and proxy.poll() is None:
            proxy.send_signal(signal.SIGTERM)
            proxy.wait(10)
        super().tearDownClass()

    def log(self):
        path = os.path.join(self.dir, "access.log")
        return read(path) if os.path.exists(path) else ""

    def assertLogged(self, target, client):
        """The request for `target` is logged once, with `client` first."""
        # Access-log lines go out a second after the first is buffered.
        self.assertTrue(wait_for(lambda: target in self.log(), 5.0),
                        f"{target!r} not in the access log:\n{self.log()}")
        lines = [line for line in self.log().splitlines() if f" {target} " in line]
        self.assertEqual(len(lines), 1, self.log())
        self.assertTrue(lines[0].startswith(client + " "), lines[0])

    def curl_from_client(self, port, path):
        return subprocess.run(["curl", "-s", "--interface", "127.0.0.2", "-o", "-", "-w",
                               " %{http_code}", f"http://127.0.0.1:{port}{path}"],
                              capture_output=True, timeout=10).stdout

    def test_haproxy_send_proxy_v2(self):
        self.assertEqual(self.curl_from_client(self.v2_port, "/a.txt?v2"), b"a\n 200")
        self.assertLogged("/a.txt?v2", "127.0.0.2")

    def test_haproxy_send_proxy_v1(self):
        self.assertEqual(self.curl_from_client(self.v1_port, "/a.txt?v1"), b"a\n 200")
        self.assertLogged("/a.txt?v1", "127.0.0.2")

    def test_haproxy_health_checks_are_local(self):
        # check-send-proxy: LOCAL headers, then a close; HAProxy marks the
        # server up only if each check's connection was accepted.
        time.sleep(0.5)
        self.assertIsNone(self.haproxy.poll())
        self.assertNotIn("is DOWN", read(os.path.join(self.dir, "haproxy.out")))

    def test_header_split_over_writes(self):
        c = self.connect()
        c.send(b"PROXY TCP4 192.0.2.9 127.0.0.1 5555 80")
        time.sleep(0.2)
        c.send(b"\r\nGET /a.txt?split HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual(c.response().status, 200)
        self.assertLogged("/a.txt?split", "192.0.2.9")

    def test_keep_alive_after_the_header(self):
        # The header comes once, before the first request only.
        c = self.connect()
        c.send(b"PROXY TCP4 192.0.2.10 127.0.0.1 5555 80\r\nGET /a.txt?ka1 HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual(c.response().status, 200)
        time.sleep(0.2)  # long enough for the connection to park between requests
        c.send(b"GET /a.txt?ka2 HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual(c.response().status, 200)
        self.assertLogged("/a.txt?ka1", "192.0.2.10")
        self.assertLogged("/a.txt?ka2", "192.0.2.10")

    def test_a_header_that_does_not_end_in_time(self):
        c = self.connect()
        c.send(b"PROXY TCP4 192.0.2.11")
        # request_timeout is 1 s: closed, without a response, well within 8.
        self.assertEqual(c.rest_until_close(8.0), b"")

    def test_v2_local_keeps_the_peer(self):
        c = self.connect()
        c.send(v2(0x20, 0x00, b"") + b"GET /a.txt?local HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual(c.response().status, 200)
        self.assertLogged("/a.txt?local", "127.0.0.1")

    def test_v2_ipv6_client(self):
        block = bytes.fromhex("20010db8000000000000000000000007") + bytes(15) + b"\x01" \
            + b"\xc3\x50\x00\x50"
        c = self.connect()
        c.send(v2(0x21, 0x21, block) + b"GET /a.txt?six HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual(c.response().status, 200)
        self.assertLogged("/a.txt?six", "2001:db8::7")

    def test_access_rules_see_the_client_the_header_names(self):
        # The TCP peer is 127.0.0.1 either way; the rule is on the client.
        for client, status in (("192.0.2.66", 403), ("192.0.2.67", 404)):
            with self.subTest(client=client):
                c = self.connect()
                c.send(f"PROXY TCP4 {client} 127.0.0.1 5555 80\r\n"
                       "GET /private/x HTTP/1.1\r\nHost: a\r\n\r\n".encode())
                self.assertEqual(c.response().status, status)

    def test_no_header_closes_without_response(self):
        for first in (b"GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n",
                      b"PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",
                      b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\nGET / HTTP/1.1\r\n"[:20] + b"X",
                      v2(0x31, 0x11, bytes(12))):
            with self.subTest(first=first):
                c = self.connect()
                c.send(first)
                self.assertEqual(c.rest_until_close(5.0), b"")


class ProxyProtocolPhp(PhpTestCase):
    CONF = """\
listener 127.0.0.1:{port} proxy_protocol
""" + UPSTREAM_PHP + """\
site {
    root = {dir}/www
    fastcgi / {
        upstream = php
    }
}
"""

    @classmethod
    def setUpDir(cls, d):
        install_fixtures(os.path.join(d, "www"), {"info.php": "info.php"})

    def server_vars(self, header):
        c = self.connect()
        c.send(header + b"GET /info.php HTTP/1.1\r\nHost: a\r\n\r\n")
        r = c.response()
        self.assertEqual(r.status, 200, r)
        return json.loads(r.body)["server"]

    def test_v2_with_the_ssl_tlv(self):
        # 192.0.2.7:50000; PP2_TYPE_SSL, PP2_CLIENT_SSL, verified, version sub-TLV.
        ssl = b"\x01\x00\x00\x00\x00" + b"\x21\x00\x07TLSv1.3"
        block = bytes([192, 0, 2, 7, 127, 0, 0, 1, 0xC3, 0x50, 0, 80]) \
            + bytes([0x20, len(ssl) >> 8, len(ssl) & 0xFF]) + ssl
        s = self.server_vars(v2(0x21, 0x11, block))
        self.assertEqual((s["REMOTE_ADDR"], s["REMOTE_PORT"]), ("192.0.2.7", "50000"))
        self.assertEqual((s["HTTPS"], s["REQUEST_SCHEME"]), ("on", "https"))
        self.assertEqual(s["SERVER_PORT"], str(self.port))

    def test_v1(self):
        s = self.server_vars(b"PROXY TCP6 2001:db8::7 ::1 4711 80\r\n")
        self.assertEqual((s["REMOTE_ADDR"], s["REMOTE_PORT"]), ("2001:db8::7", "4711"))
        self.assertNotIn("HTTPS", s)
        self.assertEqual(s["REQUEST_SCHEME"], "http")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
