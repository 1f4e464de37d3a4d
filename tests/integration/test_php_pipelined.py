#!/usr/bin/env python3
"""Pipelined requests for PHP scripts that arrive with the client's end of
stream (one write, then shutdown(SHUT_WR)), the client still reading: every
request sent before the end is answered, in order, and the connection then
closes cleanly. The client is not gone: it said it sends no more, after
requests the connection had read already (nginx answers such buffered
requests too). One request alone with its end behind it is still taken for
a client that left (499), as before.

Against a real php-fpm8.2 pool of 4 children, on the I/O backend the
environment asks for (WEFT_IO_BACKEND).

    test_php_pipelined.py WEFT_BINARY
"""
import hashlib
import os
import socket
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Client, get  # noqa: E402
from php_support import SITE_CONF, PhpTestCase, SiteTestCase, install_fixtures  # noqa: E402

BIG_MD5 = hashlib.md5(b"".join(hashlib.md5(str(i).encode()).hexdigest().encode()
                               for i in range(5 * 1024 * 1024 // 32))).hexdigest()


class PipelinedThenEndTest(SiteTestCase):
    CONF = "access_log = stderr\n" + SITE_CONF

    def send_then_end(self, requests):
        """One write of all `requests`, then the client's end of stream."""
        c = Client(self.port, 20)
        self.addCleanup(c.close)
        c.send("".join(requests))
        c.sock.shutdown(socket.SHUT_WR)
        return c

    def hold(self, id):
        """Lets hold.php?id=ID answer once weft has surely seen the end:
        it came with the requests, before the script started."""
        self.marks.wait("started", id)
        time.sleep(0.2)
        self.marks.release(id)

    def assertClosesCleanly(self, c):
        """Nothing more after the answers, then the close: no reset, and
        not only when keep_alive_timeout ends the connection."""
        c.sock.settimeout(3)
        try:
            rest = c.sock.recv(65536)
        except ConnectionResetError:
            self.fail("the connection was reset after the answers")
        except socket.timeout:
            self.fail("the connection stayed open after the answers")
        self.assertEqual(rest, b"")

    def answers(self, c, count):
        got = []
        for _ in range(count):
            r = c.response()
            got.append((r.status, r.body))
        return got

    def test_every_request_before_the_end_is_answered_in_order(self):
        for count in (2, 3):
            with self.subTest(count=count):
                id = uuid.uuid4().hex[:12]
                rest = [f"n{count}-{i}" for i in range(1, count)]
                c = self.send_then_end([get(f"/hold.php?id={id}")] +
                                       [get(f"/echo.php?v={v}") for v in rest])
                self.hold(id)
                self.assertEqual(self.answers(c, count),
                                 [(200, f"late {id}\n".encode())] +
                                 [(200, v.encode()) for v in rest])
                self.assertClosesCleanly(c)

    def test_the_last_request_before_the_end_is_answered_too(self):
        # Its end is right behind it, as a lone request's is; it came
        # behind an earlier one, so the client is one that pipelines.
        id = uuid.uuid4().hex[:12]
        c = self.send_then_end([get("/echo.php?v=first"), get(f"/hold.php?id={id}")])
        self.hold(id)
        self.assertEqual(self.answers(c, 2), [(200, b"first"), (200, f"late {id}\n".encode())])
        self.assertClosesCleanly(c)

    def test_a_request_with_a_body_then_a_next_one(self):
        id = uuid.uuid4().hex[:12]
        body = "a=1&b=2"
        post = (f"POST /hold.php?id={id} HTTP/1.1\r\nHost: a\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}")
        c = self.send_then_end([post, get("/echo.php?v=after")])
        self.hold(id)
        self.assertEqual(self.answers(c, 2), [(200, f"late {id}\n".encode()), (200, b"after")])
        self.assertClosesCleanly(c)

    def test_a_response_relayed_through_the_spool(self):
        # 5 MiB does not fit the client's socket at once: the rest is
        # relayed as the client reads, watching the client meanwhile.
        c = self.send_then_end([get("/big.php"), get("/echo.php?v=after")])
        big = c.response()
        self.assertEqual((big.status, len(big.body)), (200, 5 * 1024 * 1024))
        self.assertEqual(hashlib.md5(big.body).hexdigest(), BIG_MD5)
        self.assertEqual(self.answers(c, 1), [(200, b"after")])
        self.assertClosesCleanly(c)

    def test_a_lone_request_with_its_end_is_a_client_that_left(self):
        # Nothing behind it: a proxy cannot tell a half-close from a client
        # that left; weft takes it as gone (499), as nginx does.
        id = uuid.uuid4().hex[:12]
        c = self.send_then_end([get(f"/hold.php?id={id}")])
        self.hold(id)
        c.sock.settimeout(10)
        self.assertEqual(c.sock.recv(65536), b"")
        deadline = time.monotonic() + 5
        while f'/hold.php?id={id} HTTP/1.1" 499 ' not in self.weft.stderr():
            self.assertLess(time.monotonic(), deadline, self.weft.stderr()[-2000:])
            time.sleep(0.05)


QUEUED_CONF = """\
threads = 2
request_timeout = 5s
access_log = stderr
listener 127.0.0.1:{port}
upstream php {
    server = unix:{dir}/php/php.sock
    keepalive = 1
    max_conns = 1
    read_timeout = 30s
    queue_timeout = 30s
}
site {
    root = {dir}/www
    fastcgi /off {
        upstream = php
        request_buffering = off
    }
    fastcgi / {
        upstream = php
    }
}
"""


class QueuedBehindABusyBackendTest(PhpTestCase):
    """The end comes while the pipelined requests wait in the upstream's
    queue: the first one's body not read yet (request_buffering = off), so
    only its length tells where the next request starts."""

    CONF = QUEUED_CONF
    POOLS = {"php": 2}

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"),
                         {"hold.php": "hold.php", "echo.php": "echo.php",
                          "off/echo.php": "echo.php"})

    def test_requests_queued_when_the_end_came_are_answered(self):
        id = uuid.uuid4().hex[:12]
        busy = Client(self.port, 20)
        self.addCleanup(busy.close)
        busy.send(get(f"/hold.php?id={id}"))
        self.marks.wait("started", id)  # it holds the upstream's only connection
        body = "a=1&b=2"
        c = Client(self.port, 20)
        self.addCleanup(c.close)
        c.send(f"POST /off/echo.php?v=queued HTTP/1.1\r\nHost: a\r\n"
               "Content-Type: application/x-www-form-urlencoded\r\n"
               f"Content-Length: {len(body)}\r\n\r\n{body}" + get("/echo.php?v=after"))
        c.sock.shutdown(socket.SHUT_WR)
        time.sleep(0.2)  # weft sees the end while the POST waits in the queue
        self.marks.release(id)
        r = busy.response()
        self.assertEqual((r.status, r.body), (200, f"late {id}\n".encode()))
        answers = []
        for _ in range(2):
            r = c.response()
            answers.append((r.status, r.body))
        self.assertEqual(answers, [(200, b"queued"), (200, b"after")])
        PipelinedThenEndTest.assertClosesCleanly(self, c)

    def wait_for_log(self, line):
        deadline = time.monotonic() + 5
        while line not in self.weft.stderr():
            self.assertLess(time.monotonic(), deadline, self.weft.stderr()[-2000:])
            time.sleep(0.05)

    def test_a_client_that_leaves_while_it_waits_is_let_go_at_once(self):
        # In the queue, then for its script: each wait watches the client,
        # so it ends (499) while the script it waits for still holds.
        busy_id, left_id = uuid.uuid4().hex[:12], uuid.uuid4().hex[:12]
        busy = Client(self.port, 20)
        self.addCleanup(busy.close)
        busy.send(get(f"/hold.php?id={busy_id}"))
        self.marks.wait("started", busy_id)  # it holds the upstream's only connection
        queued = Client(self.port, 20)
        queued.send(get("/echo.php?v=queued"))
        time.sleep(0.2)  # in the queue
        queued.close()
        self.wait_for_log('"GET /echo.php?v=queued HTTP/1.1" 499 ')
        self.marks.release(busy_id)
        r = busy.response()
        self.assertEqual((r.status, r.body), (200, f"late {busy_id}\n".encode()))

        waiting = Client(self.port, 20)
        waiting.send(get(f"/hold.php?id={left_id}"))
        self.marks.wait("started", left_id)
        waiting.close()
        self.wait_for_log(f'"GET /hold.php?id={left_id} HTTP/1.1" 499 ')
        self.marks.release(left_id)
        # The queue and the upstream serve on.
        after = Client(self.port, 20)
        self.addCleanup(after.close)
        after.send(get("/echo.php?v=after"))
        r = after.response()
        self.assertEqual((r.status, r.body), (200, b"after"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
