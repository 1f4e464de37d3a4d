#!/usr/bin/env python3
"""Access rules by client address (issue 17): allow_from and deny_from on a
site and on its handlers, in the order written, the first match deciding and
none allowing (nginx's allow/deny); `all`; IPv6; a denied request's 403
through error_page, and its access-log line. Clients come from 127.0.0.1,
from 127.0.0.2 (the socket bound there before it connects) and from ::1.

    test_access_rules.py WEFT_BINARY
"""
import os
import socket
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, connect_from, read_until_close, wait_for  # noqa: E402


def ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


HAVE_IPV6 = ipv6_loopback()

CONF = """\
threads = 1
listener 127.0.0.1:{port}
""" + ("listener [::1]:{port}\n" if HAVE_IPV6 else "") + """\
access_log = {dir}/access.log
site {
    host = guarded.test
    root = {dir}/www
    error_page = 403 /errors/403.html
    allow_from = 127.0.0.1
    allow_from = ::1
    deny_from = all
    response /inherit {
        body = inherit
    }
    response /open {
        body = open
        allow_from = all
    }
    response /only2 {
        body = only2
        allow_from = 127.0.0.2
        deny_from = all
    }
    response /order {
        body = order
        deny_from = 127.0.0.2
        allow_from = 127.0.0.0/8
        deny_from = all
    }
    response /nomatch {
        body = nomatch
        deny_from = 10.0.0.0/8 2001:db8::/32
    }
    response /v6 {
        body = v6
        deny_from = ::1
    }
    response /ownpage {
        body = ownpage
        deny_from = all
        error_page = 403 file {dir}/own403.html
    }
    files /errors {
    }
}
site {
    host = free.test
    response / {
        body = free
    }
}
"""


def request(port, path, host, source="127.0.0.1"):
    """One GET from `source` (bound before the connect): (status, body)."""
    with connect_from(port, source, timeout=5.0) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        status, _, body = read_until_close(s)
    return status, body


class AccessRulesTest(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        os.makedirs(os.path.join(dir, "www", "errors"))
        with open(os.path.join(dir, "www", "errors", "403.html"), "w") as f:
            f.write("site forbids\n")
        with open(os.path.join(dir, "own403.html"), "w") as f:
            f.write("handler forbids\n")

    def get(self, path, source="127.0.0.1", host="guarded.test"):
        return request(self.port, path, host, source)

    def test_site_rules_apply_to_handlers_without_their_own(self):
        self.assertEqual(self.get("/inherit"), (200, "inherit"))
        status, body = self.get("/inherit", "127.0.0.2")
        self.assertEqual(status, 403)
        self.assertEqual(body, "site forbids\n")  # the site's error_page

    def test_a_handlers_rules_replace_the_sites(self):
        # allow_from = all on the handler: the site's deny_from = all is gone.
        self.assertEqual(self.get("/open", "127.0.0.2"), (200, "open"))
        self.assertEqual(self.get("/only2", "127.0.0.2"), (200, "only2"))
        self.assertEqual(self.get("/only2")[0], 403)  # the site allows .1; the handler not

    def test_first_match_wins(self):
        # deny 127.0.0.2 comes before allow 127.0.0.0/8.
        self.assertEqual(self.get("/order", "127.0.0.2")[0], 403)
        self.assertEqual(self.get("/order"), (200, "order"))

    def test_no_match_allows(self):
        # As nginx: with no rule matching, the request goes through.
        self.assertEqual(self.get("/nomatch"), (200, "nomatch"))
        self.assertEqual(self.get("/nomatch", "127.0.0.2"), (200, "nomatch"))

    def test_a_path_no_handler_takes_gets_the_sites_rules(self):
        self.assertEqual(self.get("/nothing/here")[0], 404)
        self.assertEqual(self.get("/nothing/here", "127.0.0.2"), (403, "site forbids\n"))

    def test_the_handlers_own_error_page(self):
        self.assertEqual(self.get("/ownpage"), (403, "handler forbids\n"))

    def test_a_site_without_rules_serves_everyone(self):
        for source in ["127.0.0.1", "127.0.0.2"] + (["::1"] if HAVE_IPV6 else []):
            self.assertEqual(self.get("/", source, host="free.test"), (200, "free"))

    @unittest.skipUnless(HAVE_IPV6, "no IPv6 loopback")
    def test_ipv6_clients(self):
        self.assertEqual(self.get("/inherit", "::1"), (200, "inherit"))  # allow_from = ::1
        self.assertEqual(self.get("/v6", "::1")[0], 403)
        self.assertEqual(self.get("/v6"), (200, "v6"))
        self.assertEqual(self.get("/only2", "::1")[0], 403)  # deny_from = all
        self.assertEqual(self.get("/nomatch", "::1"), (200, "nomatch"))

    def test_the_access_log_says_403(self):
        self.assertEqual(self.get("/only2?logged", "127.0.0.1")[0], 403)
        self.assertEqual(self.get("/only2?logged", "127.0.0.2")[0], 200)
        log = os.path.join(self.dir, "access.log")

        def lines():
            with open(log) as f:
                return [line for line in f if "/only2?logged" in line]

        self.assertTrue(wait_for(lambda: len(lines()) == 2, timeout=5.0), lines())
        by_client = {line.split(" ", 1)[0]: line for line in lines()}
        self.assertIn('" 403 ', by_client["127.0.0.1"])
        self.assertIn('" 200 ', by_client["127.0.0.2"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
