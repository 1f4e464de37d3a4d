#!/usr/bin/env python3
"""weft's fastcgi handler in front of a real php-fpm8.2: the pool the tests
count connections on, a load on four children, and the backend in trouble
(stopped, restarted, slow, busy, two of them).

    test_php_backend.py WEFT_BINARY
"""
import os
import socket
import sys
import tempfile
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Client, get  # noqa: E402
from php_support import (PhpFpm, PhpTestCase, SiteTestCase, fastcgi_get,  # noqa: E402
                         install_fixtures, require_php_fpm)


class Harness(unittest.TestCase):
    """The test's own tools, without weft: the pool answers, and the
    connection count counts what the other tests take it for."""

    @classmethod
    def setUpClass(cls):
        require_php_fpm()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.realpath(cls.tmp.name)
        install_fixtures(os.path.join(cls.dir, "www"), {"pool.php": "pool.php"})
        cls.script = os.path.join(cls.dir, "www", "pool.php")
        cls.pool = PhpFpm(cls.dir, "harness", children=2)

    @classmethod
    def tearDownClass(cls):
        cls.pool.stop()
        cls.tmp.cleanup()

    def test_the_pool_answers_fastcgi(self):
        out, err = fastcgi_get(self.pool.socket, self.script)
        self.assertTrue(out.endswith(b"\r\n\r\nharness"), out)

    def test_each_open_connection_counts_once_accepted_or_waiting(self):
        socks = []
        try:
            # Four connections to a pool of two children: two accepted, two
            # waiting in the backlog; all four are open.
            for _ in range(4):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                socks.append(s)
                s.connect(self.pool.socket)
            self.pool.wait_connections(lambda n: n == 2, what="2 accepted", states=("03",))
            self.pool.wait_connections(lambda n: n == 4, what="4")
            self.assertEqual(self.pool.connections(("02",)), 2)
        finally:
            for s in socks:
                s.close()
        self.pool.wait_connections(lambda n: n == 0, what="0 once closed")

    def test_a_kept_connection_counts_until_it_is_closed(self):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.pool.socket)
            for _ in range(2):
                out, _ = fastcgi_get(self.pool.socket, self.script, sock=s)
                self.assertTrue(out.endswith(b"harness"), out)
                self.assertEqual(self.pool.connections(), 1)
        self.pool.wait_connections(lambda n: n == 0, what="0 once closed")

    def test_a_restarted_pool_answers_again(self):
        self.pool.restart()
        out, _ = fastcgi_get(self.pool.socket, self.script)
        self.assertTrue(out.endswith(b"harness"), out)


class Load(SiteTestCase):
    def test_50_concurrent_requests_on_4_children(self):
        results = {}
        peak = [0]
        done = threading.Event()
        pool = self.pools["php"]

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], pool.connections())
                time.sleep(0.005)

        def one(i):
            try:
                c = Client(self.port, timeout=30)
                try:
                    c.send(get(f"/echo.php?v=req-{i}&ms=20"))
                    r = c.response()
                    results[i] = (r.status, r.body)
                finally:
                    c.close()
            except Exception as e:  # reported below, with the others
                results[i] = (None, repr(e).encode())

        sampler = threading.Thread(target=sample)
        sampler.start()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        done.set()
        sampler.join()
        bad = {i: r for i, r in results.items() if r != (200, f"req-{i}".encode())}
        self.assertEqual(len(results), 50)
        self.assertEqual(bad, {})
        self.assertLessEqual(peak[0], 4, "more backend connections than max_conns")
        pool.wait_connections(lambda n: n <= 4, what="at most keepalive = 4")


class BackendDown(PhpTestCase):
    CONF = """\
threads = 2
listener 127.0.0.1:{port}
upstream down {
    server = unix:{dir}/down/php.sock
    keepalive = 2
    max_conns = 2
    connect_timeout = 10s
    read_timeout = 10s
}
site {
    root = {dir}/www
    fastcgi / {
        upstream = down
    }
}
"""
    POOLS = {"down": 2}

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {"pool.php": "pool.php"})

    def assertBadGatewayFast(self):
        start = time.monotonic()
        r = self.curl("/pool.php")
        elapsed = time.monotonic() - start
        self.assertEqual(r.status, 502, r.body)
        # connect_timeout is 10 s: waiting it out would be the bug.
        self.assertLess(elapsed, 3.0)

    def test_a_stopped_backend_is_502_at_once_and_a_restart_recovers(self):
        pool = self.pools["down"]
        self.assertEqual(self.curl("/pool.php").body, b"down")  # a kept connection now
        pool.stop()
        try:
            self.assertFalse(os.path.exists(pool.socket))
            self.assertBadGatewayFast()
            self.assertBadGatewayFast()
            # A socket file nobody listens on: connect() is refused.
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
                stale.bind(pool.socket)
                self.assertBadGatewayFast()
            os.unlink(pool.socket)
        finally:
            pool.start()
        for _ in range(5):
            r = self.curl("/pool.php")
            self.assertEqual((r.status, r.body), (200, b"down"))

    def test_a_backend_with_a_full_backlog_is_502_at_once(self):
        # connect() to a unix socket whose backlog is full fails with EAGAIN
        # at once: the backend is full, the connect is not in progress.
        pool = self.pools["down"]
        pool.stop()
        fillers = []
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as full:
                full.bind(pool.socket)
                full.listen(1)
                for _ in range(100):
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.setblocking(False)
                    try:
                        s.connect(pool.socket)
                    except BlockingIOError:
                        s.close()
                        break
                    fillers.append(s)
                else:
                    self.fail("the backlog never filled")
                self.assertBadGatewayFast()
            os.unlink(pool.socket)
        finally:
            for s in fillers:
                s.close()
            pool.start()
        self.assertEqual(self.curl("/pool.php").body, b"down")

    def test_a_restart_under_kept_connections_is_not_seen(self):
        pool = self.pools["down"]
        for _ in range(3):
            self.assertEqual(self.curl("/pool.php").body, b"down")
        pool.wait_connections(lambda n: n >= 1, what="a kept connection")
        # The kept connections die with the old pool; nothing was sent on
        # them yet, so weft retries on a fresh one.
        pool.restart()
        for _ in range(3):
            r = self.curl("/pool.php")
            self.assertEqual((r.status, r.body), (200, b"down"))


class SlowBackend(PhpTestCase):
    """read_timeout, and clients that leave: backend connections never end
    up in a bad state or leak. Both upstreams allow one connection, so a
    connection weft forgot to give back would stop everything."""

    CONF = """\
threads = 2
listener 127.0.0.1:{port}
upstream slow {
    server = unix:{dir}/slow/php.sock
    keepalive = 1
    max_conns = 1
    read_timeout = 1s
    queue_timeout = 5s
}
upstream held {
    server = unix:{dir}/held/php.sock
    keepalive = 1
    max_conns = 1
    read_timeout = 30s
    queue_timeout = 3s
}
site {
    host = slow.test
    root = {dir}/www
    fastcgi / {
        upstream = slow
    }
}
site {
    host = held.test
    root = {dir}/www
    fastcgi / {
        upstream = held
    }
}
"""
    POOLS = {"slow": 2, "held": 2}  # a pool each, so each count is one upstream's

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {"hold.php": "hold.php", "echo.php": "echo.php"})

    def setUp(self):
        self.held = []
        self.addCleanup(self.release_all)

    def release_all(self):
        for id in self.held:
            self.marks.release(id)
        for id in self.held:
            self.marks.wait("done", id, timeout=30)

    def hold_id(self):
        id = uuid.uuid4().hex[:12]
        self.held.append(id)
        return id

    def echo(self, host, v):
        c, r = self.roundtrip(get(f"/echo.php?v={v}", host=host))
        return r.status, r.body

    def test_a_script_slower_than_read_timeout_is_504_and_its_connection_is_not_reused(self):
        id = self.hold_id()
        c, r = self.roundtrip(get(f"/hold.php?id={id}", host="slow.test"))
        self.assertEqual(r.status, 504, r)
        self.assertFalse(self.marks.exists("done", id))
        # The script still runs; the only connection weft may open is free.
        self.assertEqual(self.echo("slow.test", "while-held"), (200, b"while-held"))
        # Now the late output is written to the connection of the 504.
        self.marks.release(id)
        self.marks.wait("done", id)
        for i in range(3):
            self.assertEqual(self.echo("slow.test", f"after-{i}"), (200, f"after-{i}".encode()))
        self.pools["slow"].wait_connections(lambda n: n <= 1, what="at most keepalive = 1")

    def test_a_client_that_leaves_frees_its_backend_connection(self):
        id = self.hold_id()
        c = Client(self.port)
        c.send(get(f"/hold.php?id={id}", host="held.test"))
        self.marks.wait("started", id)
        time.sleep(0.3)
        c.close()
        # The script still holds its worker, but weft gave the connection
        # up: the next request gets the one connection allowed.
        self.assertEqual(self.echo("held.test", "next"), (200, b"next"))
        self.assertFalse(self.marks.exists("done", id), "the held script was not held")
        self.marks.release(id)
        self.marks.wait("done", id)
        self.pools["held"].wait_connections(lambda n: n <= 1, what="at most keepalive = 1")
        self.assertEqual(self.echo("held.test", "last"), (200, b"last"))

    def test_a_client_that_leaves_the_queue_takes_nothing_with_it(self):
        id = self.hold_id()
        holder = Client(self.port, timeout=30)
        self.addCleanup(holder.close)
        holder.send(get(f"/hold.php?id={id}", host="held.test"))
        self.marks.wait("started", id)
        # Waits for the one connection, and leaves.
        for _ in range(3):
            quitter = Client(self.port)
            quitter.send(get("/echo.php?v=never", host="held.test"))
            time.sleep(0.2)
            quitter.close()
        self.marks.release(id)
        r = holder.response()
        self.assertEqual((r.status, r.body), (200, f"late {id}\n".encode()))
        self.assertEqual(self.echo("held.test", "then"), (200, b"then"))


class Queue(PhpTestCase):
    """max_conns busy: a request waits its turn, up to queue_timeout."""

    CONF = """\
threads = 2
listener 127.0.0.1:{port}
upstream one {
    server = unix:{dir}/queue/php.sock
    keepalive = 1
    max_conns = 1
    queue_timeout = 10s
}
upstream short {
    server = unix:{dir}/queue/php.sock
    keepalive = 1
    max_conns = 1
    queue_timeout = 1s
}
site {
    host = one.test
    root = {dir}/www
    fastcgi / {
        upstream = one
    }
}
site {
    host = short.test
    root = {dir}/www
    fastcgi / {
        upstream = short
    }
}
"""
    POOLS = {"queue": 3}

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {"hold.php": "hold.php", "echo.php": "echo.php"})

    def start_request(self, path, host):
        """Sends a request on its own thread; returns (thread, result list)."""
        result = []
        c = Client(self.port, timeout=30)
        self.addCleanup(c.close)
        c.send(get(path, host=host))

        def read():
            try:
                r = c.response()
                result.append((r.status, r.body))
            except Exception as e:
                result.append((None, repr(e).encode()))
        t = threading.Thread(target=read)
        t.start()
        return t, result

    def hold(self, host):
        id = uuid.uuid4().hex[:12]
        self.addCleanup(self.marks.release, id)
        t, result = self.start_request(f"/hold.php?id={id}", host)
        self.marks.wait("started", id)
        return id, t, result

    def test_a_request_waits_for_a_free_connection(self):
        id, holder, held = self.hold("one.test")
        waiter, waited = self.start_request("/echo.php?v=waited", "one.test")
        waiter.join(0.5)
        self.assertEqual(waited, [], "answered while max_conns = 1 was busy")
        self.assertLessEqual(self.pools["queue"].connections(), 1)
        self.marks.release(id)
        holder.join(20)
        waiter.join(20)
        self.assertEqual(held, [(200, f"late {id}\n".encode())])
        self.assertEqual(waited, [(200, b"waited")])

    def test_a_wait_longer_than_queue_timeout_is_503(self):
        id, holder, held = self.hold("short.test")
        c, r = self.roundtrip(get("/echo.php?v=late", host="short.test"), timeout=8)
        self.assertEqual(r.status, 503, r)
        self.assertFalse(self.marks.exists("done", id))
        self.marks.release(id)
        holder.join(20)
        self.assertEqual(held, [(200, f"late {id}\n".encode())])
        c, r = self.roundtrip(get("/echo.php?v=then", host="short.test"))
        self.assertEqual((r.status, r.body), (200, b"then"))


class Failover(PhpTestCase):
    CONF = """\
threads = 2
listener 127.0.0.1:{port}
upstream pair {
    server = unix:{dir}/a/php.sock
    server = unix:{dir}/b/php.sock
    keepalive = 2
    max_conns = 4
    connect_timeout = 2s
}
site {
    root = {dir}/www
    fastcgi / {
        upstream = pair
    }
}
"""
    POOLS = {"a": 2, "b": 2}

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {"pool.php": "pool.php"})

    def answers(self, n):
        seen = []
        for _ in range(n):
            r = self.curl("/pool.php")
            self.assertEqual(r.status, 200, r.body)
            seen.append(r.body.decode())
        return seen

    def test_requests_go_to_both_and_to_the_other_when_one_stops(self):
        self.assertEqual(set(self.answers(10)), {"a", "b"})
        self.pools["b"].stop()
        try:
            self.assertEqual(set(self.answers(10)), {"a"})
        finally:
            self.pools["b"].start()
        self.assertTrue(set(self.answers(10)) <= {"a", "b"})


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
