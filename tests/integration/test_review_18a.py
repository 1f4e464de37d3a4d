#!/usr/bin/env python3
"""Review 18a: hostile cases against the pubsub session side.

    test_review_18a.py WEFT_BINARY

test_pong_queue_memory_is_bounded_near_max_queued FAILS on eb32474: the
send queue is bounded by the bytes it holds (max_queued), but each queued
pong of an empty ping is 2 bytes that cost a heap Piece (~64 B) and an
Entry (24 B, in a vector that doubles): a client that sends empty pings
and never reads makes one session hold ~50x max_queued.
"""
import base64
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase  # noqa: E402

CONF = """\
threads = 1
listener 127.0.0.1:{port}
site {
    pubsub /live {
        max_queued = 256K
        ping = 0
    }
}
"""

MASK = b"\x01\x02\x03\x04"
EMPTY_PING = bytes([0x89, 0x80]) + MASK  # masked, no payload: 6 bytes


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def upgrade(port, rcvbuf=None):
    """A WebSocket that reads as little as the kernel lets it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /live/t HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            raise AssertionError("closed during the handshake")
        head += chunk
    if not head.startswith(b"HTTP/1.1 101"):
        raise AssertionError(head)
    return s


class ReviewTest(ServerTestCase):
    CONF = CONF

    def settle_rss(self, pid, limit_kib, seconds=10):
        """RSS once it stops growing (or passes limit_kib), within `seconds`."""
        deadline = time.monotonic() + seconds
        last = rss_kib(pid)
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = rss_kib(pid)
            if now > limit_kib or now == last:
                return now
            last = now
        return last

    def test_pong_queue_memory_is_bounded_near_max_queued(self):
        pid = self.weft.process.pid
        warm = upgrade(self.port)
        warm.close()
        time.sleep(0.3)
        before = rss_kib(pid)
        s = upgrade(self.port, rcvbuf=4096)
        self.addCleanup(s.close)
        # 120000 pongs of 2 bytes: 240000 bytes queued, under max_queued
        # (262144): the session stays open and keeps all of them.
        batch = EMPTY_PING * 1000
        for _ in range(120):
            s.sendall(batch)
        limit = before + 256 + 4096  # max_queued plus 4 MiB of slack
        after = self.settle_rss(pid, limit)
        self.assertLessEqual(
            after - before, 256 + 4096,
            f"one session that never reads grew weft's RSS by {after - before} KiB "
            f"with max_queued = 256 KiB")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
