#!/usr/bin/env python3
"""Review of issue 17's limits (what an adversary tried that broke): a
site's limit_rate must bound password guessing against the site's
auth_basic also on paths no handler takes, where the site's credentials
are checked before the 404; the limit table's sets must not be chosen by
an attacker who read the source (a seed that reaches IPv4 keys too); a
request delayed within its burst whose client leaves ends then, as
nginx's, instead of holding its connection for the whole delay.

    test_review_17b.py WEFT_BINARY
"""
import base64
import hashlib
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, connect_from, read_until_close  # noqa: E402

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
    with connect_from(port, source) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
                  .encode())
        return read_until_close(s)


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


MASK64 = (1 << 64) - 1


def unseeded_mix(x):
    """The table's hash (splitmix64's finaliser) as a reader of the source
    computes it."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def colliding_loopback_addresses(count, limit_id=1, sets=8):
    """`count` addresses of 127.0.0.0/8 that the unseeded hash of an IPv4
    key under limit `limit_id` puts in set 0 of `sets`."""
    found = []
    host = 0x7F480000  # 127.72.0.0 on: addresses no other test takes
    while len(found) < count:
        packed = host.to_bytes(4, "big")
        key1 = (0xFFFF << 32) | int.from_bytes(packed, "little")
        if unseeded_mix((key1 + limit_id) & MASK64) % sets == 0:
            found.append(".".join(str(b) for b in packed))
        host += 1
    return found


CHOSEN_CONF = """\
threads = 2
listener 127.0.0.1:{port}
limit_table = 64
site {
    limit_rate = 1r/m
    response / {
        body = ok
    }
}
"""


class ChosenAddressesTest(ServerTestCase):
    CONF = CHOSEN_CONF

    def test_eight_chosen_addresses_do_not_lock_out_a_ninth(self):
        # 64 entries: 8 sets of 8. One request each holds an entry for a
        # minute (1r/m); were the seed not in an IPv4 key's hash, these 8
        # would fill one set in every process and the 9th would get 503.
        addresses = colliding_loopback_addresses(9)
        for address in addresses[:8]:
            self.assertEqual(request_with(self.port, "/", address, "a.test", "")[0], 200)
        self.assertEqual(request_with(self.port, "/", addresses[8], "a.test", "")[0], 200)


DELAY_CONF = """\
threads = 1
listener 127.0.0.1:{port}
site {
    limit_rate = 1r/m burst 30
    response / {
        body = ok
    }
    status /status {
        limit_rate = off
    }
}
"""


class DelayedClientLeavesTest(ServerTestCase):
    CONF = DELAY_CONF

    def active(self):
        with connect_from(self.port, "127.0.0.1") as s:
            s.sendall(b"GET /status HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            body = read_until_close(s)[2]
        return int(body.split("Active connections:")[1].split()[0])

    def test_a_delayed_request_ends_when_its_client_leaves(self):
        # 1r/m burst 30: the n-th request waits n-1 minutes.
        self.assertEqual(request_with(self.port, "/", "127.0.74.1", "a.test", "")[0], 200)
        waiting = []
        for _ in range(10):
            s = connect_from(self.port, "127.0.74.1")
            s.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            waiting.append(s)
        deadline = time.monotonic() + 5
        while self.active() < 11 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.active(), 11)  # the 10 waiting, and this one
        for s in waiting:
            s.close()
        # Each left: its connection (a coroutine, an fd) goes at once, not
        # after its minutes.
        deadline = time.monotonic() + 5
        while self.active() > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.active(), 1)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[2:])
