#!/usr/bin/env python3
"""Review 19a: the io_uring backend (stage 1) attacked through the real
binary with WEFT_IO_BACKEND=uring: a FIN promptly after weft closes, fd
numbers churned (a stale completion waking the wrong connection would hang
a client), EMFILE on the multishot accept then recovery, idle connections
closed by the keep-alive timer get their FIN.

    test_review_19a.py WEFT_BINARY
"""
import os
import resource
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("WEFT_IO_BACKEND", "uring")
from http_support import Weft  # noqa: E402

CONF = """\
threads = 2
shutdown_timeout = 1s
listener 127.0.0.1:{port}
site {
    response / {
        body = inside
    }
}
"""

FILES_CONF = """\
threads = 2
keep_alive_timeout = 3s
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files / {
    }
}
"""

REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
CLOSE = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def read_to_eof(s, timeout):
    s.settimeout(timeout)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk


class UringTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = os.path.realpath(self.tmp.name)

    def start(self, conf=CONF):
        weft = Weft(self.dir, conf)
        self.addCleanup(weft.kill)
        return weft

    def test_peer_sees_fin_promptly_after_connection_close(self):
        weft = self.start()
        socks = [socket.create_connection(("127.0.0.1", weft.port)) for _ in range(200)]
        try:
            for s in socks:
                s.sendall(CLOSE)
            for s in socks:
                data = read_to_eof(s, 5.0)  # socket.timeout: no FIN (poll holds the file)
                self.assertIn(b"inside", data)
        finally:
            for s in socks:
                s.close()
        self.assertEqual(weft.stop(), 0, weft.stderr())

    def test_fd_numbers_churned_every_client_answered(self):
        weft = self.start()
        errors = []

        def churn():
            try:
                for i in range(300):
                    s = socket.create_connection(("127.0.0.1", weft.port))
                    if i % 3 == 0:
                        s.close()  # gone before weft reads: its fd number is reused at once
                        continue
                    s.sendall(REQUEST + (CLOSE if i % 3 == 1 else REQUEST))
                    if i % 3 == 2:
                        s.settimeout(5.0)
                        s.recv(10)
                        s.close()  # closed with a response in flight
                        continue
                    data = read_to_eof(s, 5.0)
                    if data.count(b"inside") != 2:
                        errors.append(data)
                    s.close()
            except OSError as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=churn) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(weft.stop(), 0, weft.stderr())

    def test_emfile_pauses_multishot_accept_then_recovers(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, hard))
        try:
            weft = self.start()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        held = []
        try:
            for _ in range(200):
                held.append(socket.create_connection(("127.0.0.1", weft.port), timeout=5))
            time.sleep(0.5)  # the accept fails with EMFILE, pauses
        finally:
            for s in held:
                s.close()
        deadline = time.monotonic() + 10
        answered = False
        while time.monotonic() < deadline and not answered:
            try:
                with socket.create_connection(("127.0.0.1", weft.port), timeout=2) as s:
                    s.sendall(CLOSE)
                    answered = b"inside" in read_to_eof(s, 2.0)
            except OSError:
                time.sleep(0.2)
        self.assertTrue(answered, "no answer after EMFILE\n" + weft.stderr())
        self.assertEqual(weft.stop(), 0, weft.stderr())

    def test_keep_alive_timeout_closes_idle_connections_with_a_fin(self):
        os.mkdir(os.path.join(self.dir, "www"))
        weft = self.start(FILES_CONF)
        socks = [socket.create_connection(("127.0.0.1", weft.port)) for _ in range(100)]
        for s in socks:
            s.sendall(REQUEST.replace(b"/", b"/none", 1))
        started = time.monotonic()
        for s in socks:
            read_to_eof(s, 10.0)  # the 3 s keep-alive timeout, then EOF
            s.close()
        self.assertLess(time.monotonic() - started, 9.0)
        self.assertEqual(weft.stop(), 0, weft.stderr())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
