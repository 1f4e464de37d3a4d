#!/usr/bin/env python3
"""A response cut short (the client took nothing for send_timeout) is logged
with the body bytes that went, as nginx's $body_bytes_sent: not 0, not the
file's length.

    test_http_cut_responses.py WEFT_BINARY
"""
import os
import re
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase  # noqa: E402

SIZE = 32 << 20  # far more than any socket buffers between us

CONF = """\
threads = 1
send_timeout = 1s
access_log = {dir}/access.log
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files / {
    }
}
"""


class CutResponses(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        os.makedirs(os.path.join(d, "www"))
        with open(os.path.join(d, "www", "big.bin"), "wb") as f:
            f.truncate(SIZE)

    def logged_bytes(self, marker, timeout=10.0):
        """The byte count of the access-log line whose request holds `marker`
        (written within a second of the response's end)."""
        path = os.path.join(self.dir, "access.log")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        if marker in line:
                            return int(re.search(r'" (\d{3}) (\d+|-) ', line).group(2))
            time.sleep(0.1)
        self.fail(f"no access-log line for {marker}")

    def test_a_file_cut_by_send_timeout_logs_the_bytes_that_went(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", self.port))
        self.addCleanup(s.close)
        s.sendall(b"GET /big.bin?cut HTTP/1.1\r\nHost: a\r\n\r\n")
        # Read nothing: the server's sendfile fills the buffers, then waits
        # send_timeout (1 s) for room and gives up.
        time.sleep(3.0)
        sent = self.logged_bytes("/big.bin?cut")
        self.assertGreater(sent, 0)
        self.assertLess(sent, SIZE)

    def test_a_file_sent_whole_logs_its_length(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        self.addCleanup(s.close)
        s.sendall(b"GET /big.bin?whole HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        got = 0
        while True:
            data = s.recv(1 << 20)
            if not data:
                break
            got += len(data)
        self.assertGreater(got, SIZE)  # the head, and the whole body
        self.assertEqual(self.logged_bytes("/big.bin?whole"), SIZE)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
