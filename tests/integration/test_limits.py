#!/usr/bin/env python3
"""limit_conn and limit_rate per client address (issue 17): separate budgets
for 127.0.0.1 and 127.0.0.2 (each test takes addresses of its own from
127.0.0.0/8, so budgets do not meet), 429 with a sane Retry-After through
the site's error page, the bucket refilling, a burst delayed without
nodelay, limit_status = 503, a handler's own limits and a handler without
any, the access log; requests in progress held open in PHP (a real
php-fpm8.2), by a body trickled in or by a response not read, across two
loops, and released when they end, when their client leaves, and across a
reload; a table of one entry that is full.

    test_limits.py WEFT_BINARY
"""
import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, connect_from, read_until_close, wait_for  # noqa: E402
from php_support import PhpTestCase, install_fixtures  # noqa: E402


def request(port, path, source="127.0.0.1", host="limited.test", body=None):
    with connect_from(port, source) as s:
        extra = f"Content-Length: {len(body)}\r\n" if body is not None else ""
        s.sendall(f"{'POST' if body is not None else 'GET'} {path} HTTP/1.1\r\nHost: {host}\r\n"
                  f"{extra}Connection: close\r\n\r\n".encode() + (body or b""))
        return read_until_close(s)


def retry_after(headers):
    return int(headers["retry-after"])


CONF = """\
threads = 2
listener 127.0.0.1:{port}
access_log = {dir}/access.log
site {
    host = limited.test
    root = {dir}/www
    limit_rate = 5r/m burst 4 nodelay
    error_page = 429 /errors/429.html
    response /site {
        body = site
    }
    response /own {
        body = own
        limit_rate = 1r/m burst 2 nodelay
    }
    response /free {
        body = free
        limit_rate = off
    }
    response /refill {
        body = refill
        limit_rate = 1r/s nodelay
    }
    response /delay {
        body = delay
        limit_rate = 2r/s burst 2
    }
    response /busy {
        body = busy
        limit_rate = 1r/m nodelay
        limit_status = 503
    }
    files /errors {
        limit_rate = off
    }
}
"""


class RateLimitTest(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        os.makedirs(os.path.join(dir, "www", "errors"))
        with open(os.path.join(dir, "www", "errors", "429.html"), "w") as f:
            f.write("slow down\n")

    def get(self, path, source):
        return request(self.port, path, source)

    def test_burst_then_429_with_retry_after_and_separate_budgets(self):
        # 5r/m burst 4 nodelay: 5 at once, then refused.
        statuses = [self.get("/site", "127.0.1.1")[0] for _ in range(5)]
        self.assertEqual(statuses, [200] * 5)
        status, headers, body = self.get("/site", "127.0.1.1")
        self.assertEqual(status, 429)
        self.assertEqual(body, "slow down\n")  # the site's error page
        self.assertTrue(1 <= retry_after(headers) <= 12, headers)
        # Another address has its own budget.
        self.assertEqual(self.get("/site", "127.0.1.2")[:1], (200,))

    def test_a_handlers_own_rate_and_a_handler_without_one(self):
        for _ in range(3):  # 1r/m burst 2: three at once
            self.assertEqual(self.get("/own", "127.0.2.1")[0], 200)
        status, headers, _ = self.get("/own", "127.0.2.1")
        self.assertEqual(status, 429)
        self.assertTrue(1 <= retry_after(headers) <= 60, headers)
        # The handler's budget is its own: the site's is untouched ...
        self.assertEqual(self.get("/site", "127.0.2.1")[0], 200)
        # ... and a handler with limit_rate = off has none.
        for _ in range(20):
            self.assertEqual(self.get("/free", "127.0.2.1")[0], 200)

    def test_the_bucket_refills(self):
        self.assertEqual(self.get("/refill", "127.0.3.1")[0], 200)
        status, headers, _ = self.get("/refill", "127.0.3.1")
        self.assertEqual(status, 429)
        wait = retry_after(headers)
        self.assertEqual(wait, 1)
        time.sleep(wait)
        self.assertEqual(self.get("/refill", "127.0.3.1")[0], 200)

    def test_without_nodelay_a_burst_waits_its_turn(self):
        # 2r/s burst 2: three at once are all served, the third after the
        # two before it have drained (1 s), none refused.
        results = []
        start = time.monotonic()

        def one():
            status = self.get("/delay", "127.0.4.1")[0]
            results.append((status, time.monotonic() - start))

        threads = [threading.Thread(target=one) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10.0)
        self.assertEqual(sorted(r[0] for r in results), [200, 200, 200])
        self.assertGreaterEqual(max(r[1] for r in results), 0.9)

    def test_limit_status_503(self):
        self.assertEqual(self.get("/busy", "127.0.5.1")[0], 200)
        status, headers, _ = self.get("/busy", "127.0.5.1")
        self.assertEqual(status, 503)
        self.assertTrue(1 <= retry_after(headers) <= 60, headers)

    def test_a_refused_post_is_not_read_and_the_connection_closes(self):
        self.assertEqual(self.get("/busy", "127.0.6.1")[0], 200)
        with connect_from(self.port, "127.0.6.1") as s:
            s.sendall(b"POST /busy HTTP/1.1\r\nHost: limited.test\r\n"
                      b"Content-Length: 1000000\r\n\r\n" + b"x" * 1000)
            status, headers, _ = read_until_close(s)  # the server closes
        self.assertEqual(status, 503)
        self.assertEqual(headers.get("connection"), "close")

    def test_the_access_log_says_429(self):
        for _ in range(4):
            self.get("/own?logged", "127.0.7.1")
        log = os.path.join(self.dir, "access.log")

        def lines():
            with open(log) as f:
                return [line for line in f if "/own?logged" in line]

        self.assertTrue(wait_for(lambda: len(lines()) == 4, timeout=5.0), lines())
        # Each loop writes its own lines: in any order.
        self.assertEqual(sorted(line.split('" ')[1].split(" ")[0] for line in lines()),
                         ["200", "200", "200", "429"])
        self.assertTrue(all(line.startswith("127.0.7.1 ") for line in lines()))


class FullTableTest(ServerTestCase):
    CONF = """\
threads = 2
listener 127.0.0.1:{port}
limit_table = 1
site {
    limit_rate = 6r/m nodelay
    response / {
        body = hi
    }
}
"""

    def test_a_full_table_refuses_new_clients_until_an_entry_is_idle(self):
        self.assertEqual(request(self.port, "/", "127.0.0.1")[0], 200)
        status, headers, _ = request(self.port, "/", "127.0.0.2")
        self.assertEqual(status, 503)
        self.assertEqual(retry_after(headers), 1)
        # 127.0.0.1's bucket drains in 10 s: its entry is taken then.
        self.assertTrue(wait_for(lambda: request(self.port, "/", "127.0.0.2")[0] == 200,
                                 timeout=30.0))


class ConnLimitTest(PhpTestCase):
    POOLS = {"php": 6}
    CONF = """\
threads = 2
listener 127.0.0.1:{port}
access_log = {dir}/access.log
site {
    host = limited.test
    root = {dir}/www
    limit_conn = 2
    fastcgi / {
        pass = unix:{dir}/php/php.sock
    }
    fastcgi /free {
        pass = unix:{dir}/php/php.sock
        limit_conn = off
    }
}
"""

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {
            "hold.php": "hold.php", "echo.php": "echo.php", "big.php": "big.php",
            "free/echo.php": "echo.php"})

    def get(self, path, source):
        return request(self.port, path, source)

    def hold(self, id, source):
        """A request held in PHP until release: its socket, started."""
        s = connect_from(self.port, source)
        self.addCleanup(s.close)
        s.sendall(f"GET /hold.php?id={id} HTTP/1.1\r\nHost: limited.test\r\n"
                  "Connection: close\r\n\r\n".encode())
        self.marks.wait("started", id)
        return s

    def trickle(self, source):
        """A POST whose body never ends: the handler reads it, holding its
        count."""
        s = connect_from(self.port, source)
        self.addCleanup(s.close)
        s.sendall(b"POST /echo.php HTTP/1.1\r\nHost: limited.test\r\n"
                  b"Content-Length: 1000\r\nExpect: 100-continue\r\n\r\n")
        # The handler asks for the body: admitted, its count taken.
        self.assertTrue(s.recv(64).startswith(b"HTTP/1.1 100 Continue"))
        s.sendall(b"x" * 10)
        return s

    def refused_from(self, source, tries=6):
        """Several new connections (so both loops see some): all 429."""
        return [self.get("/echo.php", source)[0] for _ in range(tries)]

    def assertReleased(self, source, held):
        """Once the sockets of `held` close, their counts come back."""
        for s in held:
            s.close()
        self.assertTrue(wait_for(lambda: self.get("/echo.php?v=back", source)[0] == 200,
                                 timeout=5.0))
        for _ in range(5):
            self.assertEqual(self.get("/echo.php?v=ok", source)[0], 200)

    def test_requests_in_progress_are_limited_and_released_when_they_end(self):
        held = [self.hold(f"c{i}", "127.0.8.1") for i in range(2)]
        statuses = self.refused_from("127.0.8.1")
        self.assertEqual(statuses, [429] * 6)
        status, headers, _ = self.get("/echo.php?v=x", "127.0.8.1")
        self.assertEqual((status, retry_after(headers)), (429, 1))
        # Another address, and a handler without the limit, go on.
        self.assertEqual(self.get("/echo.php?v=y", "127.0.8.2")[::2], (200, "y"))
        self.assertEqual(self.get("/free/echo.php?v=z", "127.0.8.1")[::2], (200, "z"))
        for i, s in enumerate(held):
            self.marks.release(f"c{i}")
            self.assertEqual(read_until_close(s)[0], 200)
        # Both counts are back: two at once again, and many one after another.
        again = [self.hold(f"d{i}", "127.0.8.1") for i in range(2)]
        self.assertEqual(self.get("/echo.php", "127.0.8.1")[0], 429)
        for i, s in enumerate(again):
            self.marks.release(f"d{i}")
            read_until_close(s)
        for _ in range(10):
            self.assertEqual(self.get("/echo.php?v=ok", "127.0.8.1")[::2], (200, "ok"))

    def test_the_count_is_released_when_the_client_leaves(self):
        trickling = [self.trickle("127.0.9.1") for _ in range(2)]
        self.assertEqual(self.refused_from("127.0.9.1"), [429] * 6)
        self.assertReleased("127.0.9.1", trickling)

    def test_the_count_is_released_when_the_client_leaves_mid_response(self):
        readers = []
        for _ in range(2):  # 5 MiB each, that they do not read
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.addCleanup(s.close)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.bind(("127.0.11.1", 0))
            s.connect(("127.0.0.1", self.port))
            s.sendall(b"GET /big.php HTTP/1.1\r\nHost: limited.test\r\n\r\n")
            readers.append(s)
            # Admitted (its answer begun) before the next one asks.
            self.assertTrue(s.recv(12).startswith(b"HTTP/1.1 200"))
        self.assertEqual(self.refused_from("127.0.11.1"), [429] * 6)
        self.assertReleased("127.0.11.1", readers)

    def test_the_count_is_released_after_a_reload(self):
        held = [self.hold(f"r{i}", "127.0.10.1") for i in range(2)]
        self.assertEqual(self.get("/echo.php", "127.0.10.1")[0], 429)
        self.weft.process.send_signal(1)  # SIGHUP: a new server, a new table
        self.assertTrue(wait_for(lambda: self.get("/echo.php?v=new", "127.0.10.1")[0] == 200,
                                 timeout=10.0))
        for i, s in enumerate(held):
            self.marks.release(f"r{i}")
            self.assertEqual(read_until_close(s)[0], 200)
        for _ in range(5):
            self.assertEqual(self.get("/echo.php", "127.0.10.1")[0], 200)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[2:])
