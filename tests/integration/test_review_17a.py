#!/usr/bin/env python3
"""Review of issue 17's real client and Basic authentication, as attacked:
a client's broken Forwarded element, to which a trusted proxy appends its
own, must not make the proxy the client (and pass its allow_from); the loops answer while bcrypt checks are queued, and a stop ends within
shutdown_timeout however many are.

    test_review_17a.py WEFT_BINARY
"""
import base64
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Weft, free_port  # noqa: E402

HTPASSWD = shutil.which("htpasswd")

# bcrypt cost 14: about a second a check on one core, so the flood below
# queues several seconds of work even on kMaxWorkers (4) workers.
SLOW_COST = "14"
FLOOD = 40

CONF = """\
threads = 2
shutdown_timeout = 1s
listener 127.0.0.1:{port}
site {
    auth_basic = Staff
    auth_basic_user_file = {dir}/users
    response / {
        body = inside
    }
    response /public {
        auth_basic = off
        body = public
    }
}
"""


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def head(authorization):
    return (f"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: {authorization}\r\n"
            "Connection: close\r\n\r\n").encode()


def status_of(port, path, timeout):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".encode())
        return s.recv(64)[9:12]


@unittest.skipIf(HTPASSWD is None, "no htpasswd (Debian package apache2-utils)")
class PasswordChecksUnderFlood(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="weft-review17a-")
        users = os.path.join(cls.dir, "users")
        subprocess.run([HTPASSWD, "-b", "-c", "-B", "-C", SLOW_COST, users, "slow", "slow pass"],
                       check=True, capture_output=True, timeout=60)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def start(self):
        weft = Weft(self.dir, CONF, port=free_port())
        self.addCleanup(weft.kill)
        return weft

    def flood(self, weft):
        """FLOOD wrong passwords for the slow user, each on its own
        connection: the checks queue on the workers."""
        clients = []
        for _ in range(FLOOD):
            s = socket.create_connection(("127.0.0.1", weft.port), timeout=10)
            self.addCleanup(s.close)
            s.sendall(head(basic("slow", "wrong")))
            clients.append(s)
        time.sleep(0.5)
        return clients

    def test_the_loops_answer_while_checks_are_queued(self):
        weft = self.start()
        self.flood(weft)
        for path, status in (("/public", b"200"), ("/", b"401")):
            started = time.monotonic()
            self.assertEqual(status_of(weft.port, path, 30), status)
            self.assertLess(time.monotonic() - started, 5.0, path)

    def test_a_stop_does_not_wait_for_checks_nobody_waits_for(self):
        weft = self.start()
        self.flood(weft)
        # shutdown_timeout (1 s) cuts the waiting requests; the checks
        # still queued have nobody to answer, and the stop must not wait for
        # them (systemd's TimeoutStopSec would kill it first).
        started = time.monotonic()
        weft.terminate()
        weft.wait(60)
        self.assertLess(time.monotonic() - started, 6.0,
                        "SIGTERM waited for the queued password checks")


TRUSTED = "127.0.0.2"

FORWARDED_CONF = """\
real_ip_from = 127.0.0.2
real_ip_header = Forwarded
listener 127.0.0.1:{port}
site {
    response / {
        body = open
    }
    response /internal {
        allow_from = 127.0.0.2
        deny_from = all
        body = internal
    }
}
"""


def status_from(port, source, path, *fields):
    with socket.socket() as s:
        s.settimeout(10)
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        head = f"GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
        s.sendall((head + "".join(f + "\r\n" for f in fields) + "\r\n").encode("latin-1"))
        return s.recv(64)[9:12]


class ABrokenForwardedElementBeforeTheProxys(unittest.TestCase):
    """The trusted proxy (127.0.0.2, which its own allow_from lets in, as an
    internal network would) forwards for 203.0.113.9, appending an element
    to the Forwarded field the client sent, in the same field or its own."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="weft-review17a-")
        cls.weft = Weft(cls.dir, FORWARDED_CONF, port=free_port())

    @classmethod
    def tearDownClass(cls):
        cls.weft.kill()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_the_proxy_itself_is_let_in(self):
        self.assertEqual(status_from(self.weft.port, TRUSTED, "/internal"), b"200")
        self.assertEqual(status_from(self.weft.port, TRUSTED, "/internal",
                                     "Forwarded: for=203.0.113.9"), b"403")

    def test_the_client_the_proxy_names_is_still_the_client(self):
        for fields in (['Forwarded: for="x, for=203.0.113.9'],
                       ['Forwarded: garbage(, for=203.0.113.9'],
                       ['Forwarded: for=1.2.3.4;for=5.6.7.8, for="203.0.113.9"'],
                       ['Forwarded: for="x', 'Forwarded: for=203.0.113.9'],
                       ['Forwarded: for=127.0.0.2 junk', 'Forwarded: for=203.0.113.9']):
            with self.subTest(fields=fields):
                self.assertEqual(status_from(self.weft.port, TRUSTED, "/internal", *fields),
                                 b"403")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
