#!/usr/bin/env python3
"""`real_ip_from` and `real_ip_header`: the client a trusted proxy names in
X-Forwarded-For, Forwarded or X-Real-IP is what the access log (first
field, the proxy second), PHP's REMOTE_ADDR and REMOTE_PORT (a real
php-fpm8.2) and allow_from/deny_from see, request by request; X-Forwarded-Proto:
https from a trusted proxy makes PHP see HTTPS. Clients bind 127.0.0.2 (a
trusted proxy) or 127.0.0.1 (not) to vary the peer. And the issue's test:
the real HAProxy (Debian's package) with `option forwardfor`, round robin
over two weft instances, a client on 127.0.0.3: both access logs and PHP
say 127.0.0.3, with HAProxy's 127.0.0.1 second.

    test_real_ip.py WEFT_BINARY
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import CURL, Client, Weft, accepts, free_port, read, wait_for  # noqa: E402
from php_support import (UPSTREAM_PHP, PhpFpm, PhpTestCase, install_fixtures,  # noqa: E402
                         require_php_fpm)

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"

TRUSTED, UNTRUSTED = "127.0.0.2", "127.0.0.1"

SITE = UPSTREAM_PHP + """\
site {
    root = {dir}/www
    fastcgi / {
        upstream = php
    }
    files /private {
        allow_from = 203.0.113.0/24
        deny_from = all
    }
}
"""


class ClientFrom(Client):
    """A raw connection from `source` (a loopback address)."""

    def __init__(self, port, source, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                             source_address=(source, 0))
        self.timeout = timeout
        self.buf = b""
        self.eof = False


def request(path, *fields):
    head = f"GET {path} HTTP/1.1\r\nHost: a\r\n" + "".join(f + "\r\n" for f in fields)
    return (head + "\r\n").encode("latin-1")


class RealIpCase(PhpTestCase):
    @classmethod
    def setUpDir(cls, d):
        install_fixtures(os.path.join(d, "www"), {"info.php": "info.php", "a.txt": b"a\n"})

    def send_from(self, source, path, *fields):
        c = ClientFrom(self.port, source)
        self.addCleanup(c.close)
        c.send(request(path, *fields))
        return c, c.response()

    def server_vars(self, source, *fields):
        _, r = self.send_from(source, "/info.php", *fields)
        self.assertEqual(r.status, 200, r)
        return json.loads(r.body)["server"]

    def log(self):
        path = os.path.join(self.dir, "access.log")
        return read(path) if os.path.exists(path) else ""

    def logged(self, target):
        """The first two fields of the one access-log line for `target`."""
        # Access-log lines go out a second after the first is buffered.
        self.assertTrue(wait_for(lambda: f" {target} " in self.log(), 5.0),
                        f"{target!r} not in the access log:\n{self.log()}")
        lines = [line for line in self.log().splitlines() if f" {target} " in line]
        self.assertEqual(len(lines), 1, self.log())
        return tuple(lines[0].split(" ")[:2])


class XForwardedFor(RealIpCase):
    CONF = """\
access_log = {dir}/access.log
real_ip_from = 127.0.0.2 10.0.0.0/8
real_ip_from = ::1
listener 127.0.0.1:{port}
""" + SITE

    def test_php_sees_the_nearest_untrusted_address(self):
        s = self.server_vars(TRUSTED, "X-Forwarded-For: 6.6.6.6, 203.0.113.7, 10.0.0.2")
        self.assertEqual((s["REMOTE_ADDR"], s["REMOTE_PORT"]), ("203.0.113.7", ""))
        self.assertEqual(s["REQUEST_SCHEME"], "http")
        self.assertNotIn("HTTPS", s)

    def test_an_untrusted_peer_is_the_client(self):
        s = self.server_vars(UNTRUSTED, "X-Forwarded-For: 203.0.113.7",
                             "X-Forwarded-Proto: https")
        self.assertEqual(s["REMOTE_ADDR"], UNTRUSTED)
        self.assertNotEqual(s["REMOTE_PORT"], "")
        self.assertNotIn("HTTPS", s)
        self.assertEqual(s["REQUEST_SCHEME"], "http")

    def test_x_forwarded_proto_from_a_trusted_proxy(self):
        s = self.server_vars(TRUSTED, "X-Forwarded-For: 203.0.113.8", "X-Forwarded-Proto: https")
        self.assertEqual((s["HTTPS"], s["REQUEST_SCHEME"]), ("on", "https"))
        self.assertEqual(s["REMOTE_ADDR"], "203.0.113.8")
        # Without a forwarded address: the scheme alone, the peer stays.
        s = self.server_vars(TRUSTED, "X-Forwarded-Proto: HTTPS")
        self.assertEqual((s["HTTPS"], s["REMOTE_ADDR"]), ("on", TRUSTED))

    def test_several_fields_are_one_list(self):
        s = self.server_vars(TRUSTED, "X-Forwarded-For: 203.0.113.9", "Accept: */*",
                             "X-Forwarded-For: 198.51.100.4, 10.1.1.1")
        self.assertEqual(s["REMOTE_ADDR"], "198.51.100.4")
        s = self.server_vars(TRUSTED, "X-Forwarded-For: 203.0.113.9",
                             "X-Forwarded-For: 10.1.1.1, 10.1.1.2")
        self.assertEqual(s["REMOTE_ADDR"], "203.0.113.9")

    def test_all_trusted_gives_the_farthest(self):
        s = self.server_vars(TRUSTED, "X-Forwarded-For: 10.9.9.9, 10.0.0.2")
        self.assertEqual(s["REMOTE_ADDR"], "10.9.9.9")

    def test_ports_and_ipv6_in_the_list(self):
        s = self.server_vars(TRUSTED, "X-Forwarded-For: [2001:db8::17]:4711, ::1")
        self.assertEqual((s["REMOTE_ADDR"], s["REMOTE_PORT"]), ("2001:db8::17", "4711"))
        s = self.server_vars(TRUSTED, "X-Forwarded-For: 203.0.113.10:5555")
        self.assertEqual((s["REMOTE_ADDR"], s["REMOTE_PORT"]), ("203.0.113.10", "5555"))

    def test_garbage_leaves_the_peer_and_is_no_error(self):
        for value in ("nonsense", "203.0.113.11 203.0.113.12", "1.2.3.4.5", "[::1", "",
                      "unknown", "\x80\xff"):
            with self.subTest(value=value):
                s = self.server_vars(TRUSTED, f"X-Forwarded-For: {value}")
                self.assertEqual(s["REMOTE_ADDR"], TRUSTED)
        # Past a trusted address, garbage stops the walk there.
        s = self.server_vars(TRUSTED, "X-Forwarded-For: 203.0.113.13, junk, 10.0.0.7")
        self.assertEqual(s["REMOTE_ADDR"], "10.0.0.7")

    def test_the_access_log_names_client_then_proxy(self):
        self.send_from(TRUSTED, "/a.txt?log1", "X-Forwarded-For: 203.0.113.20")
        self.assertEqual(self.logged("/a.txt?log1"), ("203.0.113.20", TRUSTED))
        self.send_from(UNTRUSTED, "/a.txt?log2", "X-Forwarded-For: 203.0.113.21")
        self.assertEqual(self.logged("/a.txt?log2"), (UNTRUSTED, "-"))
        self.send_from(TRUSTED, "/a.txt?log3", "X-Forwarded-For: bogus")
        self.assertEqual(self.logged("/a.txt?log3"), (TRUSTED, "-"))

    def test_each_request_of_a_kept_connection_has_its_own_client(self):
        c, r = self.send_from(TRUSTED, "/a.txt?ka1", "X-Forwarded-For: 203.0.113.31")
        self.assertEqual(r.status, 200)
        c.send(request("/a.txt?ka2", "X-Forwarded-For: 203.0.113.32"))
        self.assertEqual(c.response().status, 200)
        c.send(request("/a.txt?ka3"))
        self.assertEqual(c.response().status, 200)
        c.send(request("/info.php?ka4", "X-Forwarded-For: 203.0.113.34"))
        r = c.response()
        self.assertEqual(json.loads(r.body)["server"]["REMOTE_ADDR"], "203.0.113.34")
        self.assertEqual(self.logged("/a.txt?ka1"), ("203.0.113.31", TRUSTED))
        self.assertEqual(self.logged("/a.txt?ka2"), ("203.0.113.32", TRUSTED))
        self.assertEqual(self.logged("/a.txt?ka3"), (TRUSTED, "-"))
        self.assertEqual(self.logged("/info.php?ka4"), ("203.0.113.34", TRUSTED))

    def test_access_rules_see_the_forwarded_client(self):
        # /private allows 203.0.113.0/24 only: 404 (allowed, no such file) or 403.
        for source, xff, status in ((TRUSTED, "203.0.113.40", 404),
                                    (TRUSTED, "198.51.100.40", 403),
                                    (TRUSTED, "198.51.100.40, 203.0.113.40", 404),
                                    (UNTRUSTED, "203.0.113.40", 403),
                                    (TRUSTED, "garbage", 403)):
            with self.subTest(source=source, xff=xff):
                _, r = self.send_from(source, "/private/x", f"X-Forwarded-For: {xff}")
                self.assertEqual(r.status, status)

    def test_curl_through_a_trusted_address(self):
        if CURL is None:
            self.skipTest("curl is not installed")
        out = subprocess.run([CURL, "-s", "--interface", TRUSTED, "-H",
                              "X-Forwarded-For: 203.0.113.50", "-H", "X-Forwarded-Proto: https",
                              f"http://127.0.0.1:{self.port}/info.php?curl"],
                             capture_output=True, timeout=15).stdout
        s = json.loads(out)["server"]
        self.assertEqual((s["REMOTE_ADDR"], s["HTTPS"]), ("203.0.113.50", "on"))
        self.assertEqual(self.logged("/info.php?curl"), ("203.0.113.50", TRUSTED))


class Forwarded(RealIpCase):
    CONF = """\
access_log = {dir}/access.log
real_ip_from = 127.0.0.2 10.0.0.0/8
real_ip_header = Forwarded
listener 127.0.0.1:{port}
""" + SITE

    def test_rfc_7239_nodes(self):
        cases = (
            ('for=192.0.2.60;proto=http;by=203.0.113.43', ("192.0.2.60", "")),
            ('For="[2001:db8:cafe::17]:4711"', ("2001:db8:cafe::17", "4711")),
            ('for="192.0.2.61:8080", for=10.0.0.3', ("192.0.2.61", "8080")),
            ('for=192.0.2.43, for="[2001:db8:cafe::17]"', ("2001:db8:cafe::17", "")),
            ('for=192.0.2.44;by=x, for=10.0.0.3;proto=https', ("192.0.2.44", "")),
            # unknown and obfuscated names stop the walk: the last address passed.
            ('for=192.0.2.45, for=unknown, for=10.0.0.4', ("10.0.0.4", "")),
            ('for="_hidden", for=10.0.0.5', ("10.0.0.5", "")),
            ('for=_SEVKISEK', (TRUSTED, None)),
        )
        for value, (address, port) in cases:
            with self.subTest(value=value):
                s = self.server_vars(TRUSTED, f"Forwarded: {value}")
                self.assertEqual(s["REMOTE_ADDR"], address)
                if port is not None:
                    self.assertEqual(s["REMOTE_PORT"], port)

    def test_malformed_leaves_the_peer(self):
        for value in ('for="192.0.2.1', 'for=192.0.2.1:80', 'for=[::1]', 'for=1.2.3.4;for=5.6.7.8',
                      'for =1.2.3.4', 'garbage'):
            with self.subTest(value=value):
                s = self.server_vars(TRUSTED, f"Forwarded: {value}")
                self.assertEqual(s["REMOTE_ADDR"], TRUSTED)

    def test_x_forwarded_for_is_not_read(self):
        s = self.server_vars(TRUSTED, "X-Forwarded-For: 203.0.113.60")
        self.assertEqual(s["REMOTE_ADDR"], TRUSTED)

    def test_logged_with_the_proxy(self):
        self.send_from(TRUSTED, "/a.txt?fwd", 'Forwarded: for="[2001:db8::5]:99"')
        self.assertEqual(self.logged("/a.txt?fwd"), ("2001:db8::5", TRUSTED))


class BehindProxyProtocol(RealIpCase):
    """A PROXY header's client is the peer whose trust decides; the TCP peer
    (127.0.0.1, the balancer) is the access log's second field."""

    CONF = """\
access_log = {dir}/access.log
real_ip_from = 192.0.2.100
listener 127.0.0.1:{port} proxy_protocol
""" + SITE

    def send(self, client, path, *fields):
        c = ClientFrom(self.port, UNTRUSTED)
        self.addCleanup(c.close)
        c.send(f"PROXY TCP4 {client} 127.0.0.1 5555 80\r\n".encode() + request(path, *fields))
        return c, c.response()

    def test_the_header_client_first_the_balancer_second(self):
        self.send("192.0.2.9", "/a.txt?pp1", "X-Forwarded-For: 203.0.113.70")
        self.assertEqual(self.logged("/a.txt?pp1"), ("192.0.2.9", UNTRUSTED))

    def test_a_trusted_header_client_forwards(self):
        c, r = self.send("192.0.2.100", "/a.txt?pp2", "X-Forwarded-For: 203.0.113.71")
        self.assertEqual(r.status, 200)
        # After a park, a new coroutine of the connection: the same answers.
        time.sleep(0.2)  # long enough for the connection to park between requests
        c.send(request("/info.php?pp3", "X-Forwarded-For: 203.0.113.72"))
        r = c.response()
        s = json.loads(r.body)["server"]
        self.assertEqual((s["REMOTE_ADDR"], s["REMOTE_PORT"]), ("203.0.113.72", ""))
        self.assertEqual(self.logged("/a.txt?pp2"), ("203.0.113.71", UNTRUSTED))
        self.assertEqual(self.logged("/info.php?pp3"), ("203.0.113.72", UNTRUSTED))


class BehindHaproxy(unittest.TestCase):
    """HAProxy with `option forwardfor`, round robin over two wefts sharing
    one php-fpm pool; the client is curl bound to 127.0.0.3."""

    CONF = """\
access_log = {dir}/access.log
real_ip_from = 127.0.0.1
listener 127.0.0.1:{port}
upstream php {
    server = unix:%s
}
site {
    root = %s
    fastcgi / {
        upstream = php
    }
}
"""

    @classmethod
    def setUpClass(cls):
        if not os.access(HAPROXY, os.X_OK):
            raise unittest.SkipTest(f"{HAPROXY} is missing (Debian package haproxy: "
                                    ".ci/install-deps)")
        if CURL is None:
            raise unittest.SkipTest("curl is not installed")
        require_php_fpm()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.realpath(cls.tmp.name)
        cls.wefts, cls.haproxy, cls.php = [], None, None
        try:
            www = os.path.join(cls.dir, "www")
            install_fixtures(www, {"info.php": "info.php"})
            cls.php = PhpFpm(cls.dir, "php")
            for name in ("a", "b"):
                d = os.path.join(cls.dir, name)
                os.makedirs(d)
                cls.wefts.append(Weft(d, cls.CONF % (cls.php.socket, www)))
            cls.port = free_port()
            cfg = os.path.join(cls.dir, "haproxy.cfg")
            with open(cfg, "w") as f:
                f.write(f"""\
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend www
    bind 127.0.0.1:{cls.port}
    option forwardfor
    http-request set-header X-Forwarded-Proto https
    default_backend wefts
backend wefts
    balance roundrobin
    server a 127.0.0.1:{cls.wefts[0].port}
    server b 127.0.0.1:{cls.wefts[1].port}
""")
            with open(os.path.join(cls.dir, "haproxy.out"), "wb") as out:
                cls.haproxy = subprocess.Popen([HAPROXY, "-f", cfg, "-db"], stdout=out,
                                               stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL)
            if not wait_for(lambda: accepts(cls.port), 5.0):
                raise AssertionError("haproxy did not start")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.haproxy and cls.haproxy.poll() is None:
                cls.haproxy.send_signal(signal.SIGTERM)
                cls.haproxy.wait(10)
            for w in cls.wefts:
                code = w.stop()
                if code != 0:
                    raise AssertionError(f"weft exited {code} on SIGTERM\n{w.stderr()}")
        finally:
            if cls.php:
                cls.php.stop()
            cls.tmp.cleanup()

    def test_both_instances_see_the_client(self):
        answers = []
        for i in range(4):
            # A client-written X-Forwarded-For comes first and does not count:
            # HAProxy adds its own field after it.
            out = subprocess.run([CURL, "-s", "--interface", "127.0.0.3", "-H",
                                  "X-Forwarded-For: 6.6.6.6",
                                  f"http://127.0.0.1:{self.port}/info.php?ha{i}"],
                                 capture_output=True, timeout=15).stdout
            answers.append(json.loads(out)["server"])
        for s in answers:
            self.assertEqual((s["REMOTE_ADDR"], s["REMOTE_PORT"]), ("127.0.0.3", ""))
            self.assertEqual((s["HTTPS"], s["REQUEST_SCHEME"]), ("on", "https"))
        for w in self.wefts:
            log = os.path.join(w.dir, "access.log")

            def lines():
                text = read(log) if os.path.exists(log) else ""
                return [line for line in text.splitlines() if "info.php?ha" in line]

            self.assertTrue(wait_for(lambda: len(lines()) == 2, 5.0),
                            f"{w.dir}: {lines()}")
            for line in lines():
                self.assertEqual(line.split(" ")[:2], ["127.0.0.3", "127.0.0.1"], line)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
