#!/usr/bin/env python3
"""Review of issue 17's limits (what an adversary tried that broke): a
site's limit_rate must bound password guessing against the site's
auth_basic also on paths no handler takes, where the site's credentials
are checked before the 404.

    test_review_17b.py WEFT_BINARY
"""
import base64
import hashlib
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase  # noqa: E402
from test_limits import open_from, read_response  # noqa: E402

CONF = """\
threads = 2
listener 127.0.0.1:{port}
site {
    host = guarded.test
    auth_basic = "staff"
    auth_basic_user_file = {dir}/users
    limit_rate = 1r/m burst 2 nodelay
    response /app {
        body = app
    }
}
"""


def request_with(port, path, source, host, extra):
    with open_from(port, source) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
                  .encode())
        return read_response(s)


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class SiteAuthGuessingTest(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        digest = base64.b64encode(hashlib.sha1(b"right").digest()).decode()
        with open(os.path.join(dir, "users"), "w") as f:
            f.write(f"admin:{{SHA}}{digest}\n")

    def guess(self, path, password, source):
        return request_with(self.port, path, source, "guarded.test",
                            f"Authorization: {basic('admin', password)}\r\n")[0]

    def test_the_sites_rate_bounds_guessing_on_a_handlers_path(self):
        statuses = [self.guess("/app", f"wrong{i}", "127.0.71.1") for i in range(6)]
        self.assertEqual(statuses[:3], [401] * 3)
        self.assertEqual(statuses[3:], [429] * 3)

    def test_the_sites_rate_bounds_guessing_on_a_path_no_handler_takes(self):
        # 401 against 404 tells a right password from a wrong one here too.
        statuses = [self.guess("/nothing", f"wrong{i}", "127.0.71.2") for i in range(6)]
        self.assertEqual(statuses[:3], [401] * 3)
        self.assertEqual(statuses[3:], [429] * 3, statuses)
        # Refused, the right one is not tested either.
        self.assertEqual(self.guess("/nothing", "right", "127.0.71.2"), 429)
        # Another address, within its budget, gets the 404 its password earns.
        self.assertEqual(self.guess("/nothing", "right", "127.0.71.3"), 404)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[2:])
