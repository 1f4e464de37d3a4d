#!/usr/bin/env python3
"""Request heads that arrive in pieces: while a head is incomplete and the
socket is empty, weft parks the connection with the bytes it has (no
coroutine, no stack) and takes them up again when more come. Memory held by
a crowd of half heads, and everything a head in pieces must still do: one
deadline (408) across parks, pipelining, empty lines, the head limit, a
half-close, a stop.

    test_http_partial_heads.py WEFT_BINARY
"""
import os
import resource
import socket
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Client, ServerTestCase, Weft, get  # noqa: E402

HELLO = b"Hello, World!"

CONF = """\
threads = 2
request_timeout = {timeout}
keep_alive_timeout = 4s
listener 127.0.0.1:{port}
site {
    root = {dir}
    response /hello {
        body = Hello, World!
    }
}
"""

# A browser-sized head; its first half ends inside a field line.
HEAD = get("/hello", extra="User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101"
           " Firefox/128.0\r\nAccept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.8\r\n"
           "Accept-Language: en-US,en;q=0.5\r\n")
PAUSE = 0.05  # long enough for the server to read, find the head incomplete, and park


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def trickle(client, data, pause=PAUSE):
    for i in range(len(data)):
        client.send(data[i:i + 1])
        time.sleep(pause)


class PartialHeads(ServerTestCase):
    CONF = CONF.replace("{timeout}", "20s")
    CLIENTS = 1000

    @classmethod
    def setUpClass(cls):
        # Our end and weft's (which inherits the limit) of each connection.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 2 * cls.CLIENTS + 200
        if soft < want:
            if hard != resource.RLIM_INFINITY and hard < want:
                raise unittest.SkipTest(f"RLIMIT_NOFILE hard limit {hard} < {want}")
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        super().setUpClass()

    def assertHello(self, r):
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, HELLO)

    def test_a_thousand_half_heads_hold_no_stack_and_are_all_answered(self):
        # Before parking partial heads, each such connection held a
        # coroutine whose stack had 41 KiB resident.
        pid = self.weft.process.pid
        for _ in range(3):  # warm: stacks, caches, the fd table's first pages
            c = self.connect()
            c.send(HEAD)
            self.assertHello(c.response())
        time.sleep(0.3)
        before = rss_kib(pid)
        half = len(HEAD) // 2
        clients = []
        try:
            for _ in range(self.CLIENTS):
                c = Client(self.port, timeout=10)
                clients.append(c)
                c.send(HEAD[:half])
            # Accepted once their bytes are in (TCP_DEFER_ACCEPT): wait until
            # weft holds them all.
            deadline = time.monotonic() + 20
            while len(os.listdir(f"/proc/{pid}/fd")) < self.CLIENTS and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertGreaterEqual(len(os.listdir(f"/proc/{pid}/fd")), self.CLIENTS)
            time.sleep(0.5)
            per_connection = (rss_kib(pid) - before) * 1024 // self.CLIENTS
            self.assertLess(per_connection, 8192,
                            f"{per_connection} bytes of RSS per connection with half a head")
            for c in clients:
                c.send(HEAD[half:])
            for c in clients:
                self.assertHello(c.response())
        finally:
            for c in clients:
                c.close()

    def test_a_head_sent_a_byte_at_a_time_with_pauses_is_answered(self):
        c = self.connect()
        trickle(c, HEAD[:60])
        c.send(HEAD[60:])
        self.assertHello(c.response())
        # And the connection goes on as usual.
        c.send(get("/hello"))
        self.assertHello(c.response())

    def test_a_complete_request_is_answered_while_the_next_head_is_partial(self):
        c = self.connect()
        nxt = get("/hello")
        c.send(get("/hello") + nxt[:10])
        # Answered at once: the response corked for the pipelined bytes is
        # pushed out before the connection parks with them.
        self.assertHello(c.response())
        time.sleep(PAUSE)
        trickle(c, nxt[10:20])
        c.send(nxt[20:])
        self.assertHello(c.response())

    def test_several_requests_in_pieces_cut_anywhere(self):
        data = (get("/hello") * 3).encode()
        for cut in (1, 5, 17, len(data) - 1):
            with self.subTest(cut=cut):
                c = self.connect()
                for start in range(0, len(data), cut):
                    c.send(data[start:start + cut])
                    time.sleep(0.01)
                for _ in range(3):
                    self.assertHello(c.response())

    def test_empty_lines_in_pieces_start_no_request(self):
        c = self.connect()
        c.send(get("/hello"))
        self.assertHello(c.response())
        # A CR alone parks as a partial head; its LF makes an empty line,
        # which starts nothing; then a request in pieces after more of them.
        for piece in ("\r", "\n", "\r\n\r", "\n"):
            c.send(piece)
            time.sleep(PAUSE)
        trickle(c, "\r\n" + get("/hello")[:8])
        c.send(get("/hello")[8:])
        self.assertHello(c.response())
        self.assertStillOpen(c, wait=0.3)

    def test_a_head_over_the_limit_in_pieces_is_431(self):
        c = self.connect()
        c.send(get("/hello")[:-2])  # without the blank line
        for _ in range(17):
            time.sleep(PAUSE)
            c.send("X-Filler: " + "a" * 1000 + "\r\n")
        r = c.response()
        self.assertEqual(r.status, 431, r)
        self.assertEqual(r.header("connection"), "close")

    def test_a_half_close_after_half_a_head_closes_without_an_answer(self):
        for parked in (False, True):
            with self.subTest(parked=parked):
                c = self.connect()
                c.send(HEAD[:30])
                if parked:
                    time.sleep(PAUSE)
                c.sock.shutdown(socket.SHUT_WR)
                self.assertEqual(c.rest_until_close(5.0), b"")


class HeadDeadline(ServerTestCase):
    CONF = CONF.replace("{timeout}", "2s")

    def test_a_head_that_stops_half_way_is_408_after_request_timeout(self):
        c = self.connect(timeout=12)
        start = time.monotonic()
        c.send(HEAD[:40])
        r = c.response()  # parked meanwhile: the timeout gives it a coroutine again
        self.assertEqual(r.status, 408, r)
        self.assertEqual(r.header("connection"), "close")
        self.assertGreater(time.monotonic() - start, 1.5)
        self.assertEqual(c.rest_until_close(5.0), b"")

    def test_one_deadline_for_the_whole_head_however_many_parks(self):
        # A byte every 100 ms parks each time; a deadline renewed by each
        # park would never end this head.
        c = self.connect(timeout=12)
        start = time.monotonic()
        head = get("/hello", extra="X-Slow: " + "a" * 200 + "\r\n").encode()
        rest = None
        for i in range(len(head)):
            try:
                c.sock.sendall(head[i:i + 1])
            except OSError:  # reset: closed with our bytes unread
                break
            rest = c.rest_until_close(0.1)
            if rest is not None or time.monotonic() - start > 10:
                break
        elapsed = time.monotonic() - start
        self.assertIsNotNone(rest, "the slow head was never cut off")
        self.assertTrue(rest.startswith(b"HTTP/1.1 408 "), rest)
        self.assertGreater(elapsed, 1.5)
        self.assertLess(elapsed, 8.0)

    def test_a_head_completed_in_time_after_parks_is_answered(self):
        c = self.connect()
        trickle(c, HEAD[:20], pause=0.05)
        c.send(HEAD[20:])
        r = c.response()
        self.assertEqual(r.status, 200, r)


class Stop(unittest.TestCase):
    def test_a_head_in_pieces_when_the_server_stops_is_still_answered(self):
        # Parked connections without a request close at a stop; one parked
        # in the middle of a head gets to finish it, as a request in
        # progress does.
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        w = Weft(os.path.realpath(tmp.name), CONF.replace("{timeout}", "10s"))
        self.addCleanup(w.kill)
        c = Client(w.port, timeout=8)
        self.addCleanup(c.close)
        c.send(HEAD[:40])
        time.sleep(0.2)
        w.terminate()
        time.sleep(0.3)
        trickle(c, HEAD[40:50])
        c.send(HEAD[50:])
        r = c.response()
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("connection"), "close")
        self.assertEqual(w.wait(8), 0, w.stderr())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
