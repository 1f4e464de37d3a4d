"""SIGHUP reload, as attacked: what a reload must never do to a request in
flight (a pipelined request dropped, a listener's socket file lost).

Usage: test_review_reload.py /path/to/weft
"""
import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import (Client, ServerTestCase, read, wait_for, write)  # noqa: E402

RECEIVE_BUFFER = 20 * 1024  # src/lib/http/receive_buffer.hpp's kSize
BIG = 16 * 1024 * 1024      # more than loopback's socket buffers hold

CONF = """\
threads = 1
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files / {
    }
}
"""


def padded_get(path, length, extra=""):
    """A GET of exactly `length` bytes (an X-Pad header fills it)."""
    bare = f"GET {path} HTTP/1.1\r\nHost: a\r\n{extra}X-Pad: \r\n\r\n"
    return bare.replace("X-Pad: ", "X-Pad: " + "p" * (length - len(bare)))


class PipelinedAcrossReload(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        write(os.path.join(d, "www", "small.txt"), "s\n")
        write(os.path.join(d, "www", "big.bin"), b"b" * BIG)

    def reload(self, count):
        self.weft.process.send_signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: f"(reload {count})" in self.weft.stderr(), 10),
                        self.weft.stderr())

    def test_a_full_buffer_of_pipelined_requests_moves_to_the_new_server(self):
        # The connection's coroutine sends a big file while the reload comes;
        # its next read then fills the receive buffer exactly with pipelined
        # requests. They moved to the new server as a parked head, which holds
        # less than a full buffer: the connection was closed with all of them
        # unanswered (40 requests lost, the client saw EOF).
        per = RECEIVE_BUFFER // 40
        first = padded_get("/small.txt", per) * 39 + padded_get("/big.bin", per)
        second = padded_get("/small.txt", per) * 40
        last = padded_get("/small.txt", 100, "Connection: close\r\n")
        self.assertEqual(len(first), RECEIVE_BUFFER)
        self.assertEqual(len(second), RECEIVE_BUFFER)
        c = Client(self.port, timeout=10)
        self.addCleanup(c.close)
        c.send(first)  # read whole: the big file's answer blocks on our window
        c.sock.settimeout(2)
        c._fill()  # the first answers came: every request of `first` was read
        c.sock.settimeout(10)
        c.send(second + last)
        self.reload(1)
        answered = 0
        for i in range(39 + 1 + 40 + 1):
            r = c.response()
            self.assertEqual(r.status, 200, f"response {i}")
            self.assertEqual(len(r.body), BIG if i == 39 else 2, f"response {i}")
            answered += 1
        self.assertEqual(answered, 81)
        self.assertEqual(c.rest_until_close(5), b"")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
