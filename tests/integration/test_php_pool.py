#!/usr/bin/env python3
"""Kept backend connections against real php-fpm8.2 pools of every size.

PHP-FPM binds a child to each connection for as long as it is open, so a
kept idle connection holds a child. A connection beyond the pool's children
waits in the pool's listen backlog until a child frees up: weft must never
keep a child idle while one of its own requests waits there (pm.max_children
below max_conns), and must give every child back after keepalive_timeout, so
another client of the pool (a second server, a cron job) gets served.

    test_php_pool.py WEFT_BINARY
"""
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Client, get  # noqa: E402
from php_support import PhpTestCase, fastcgi_get, install_fixtures  # noqa: E402

# How long the tests wait for 50 requests: far below read_timeout (60 s), so
# a request stuck behind idle connections shows as a failure, not a 504.
LOAD_BOUND = 20.0


def upstream(name, keepalive, max_conns, keepalive_timeout):
    return f"""\
upstream {name} {{
    server = unix:{{dir}}/{name}/php.sock
    keepalive = {keepalive}
    max_conns = {max_conns}
    keepalive_timeout = {keepalive_timeout}
    read_timeout = 60s
    queue_timeout = 60s
}}
"""


def site(name):
    return f"""\
site {{
    host = {name}.test
    root = {{dir}}/www
    fastcgi / {{
        upstream = {name}
    }}
}}
"""


def unix_sockets_of(pid):
    """How many unix sockets process `pid` holds: weft's only ones are its
    backend connections, counted on its side (the pool's end of a closed
    connection lingers until PHP-FPM sees the close)."""
    with open("/proc/net/unix") as f:
        next(f)
        inodes = {line.split()[6] for line in f if len(line.split()) > 6}
    count = 0
    fds = f"/proc/{pid}/fd"
    for fd in os.listdir(fds):
        try:
            target = os.readlink(os.path.join(fds, fd))
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:[") and target[8:-1] in inodes:
            count += 1
    return count


class PoolTestCase(PhpTestCase):
    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {"echo.php": "echo.php"})

    def load(self, host, count=50, ms=50):
        """`count` concurrent requests of a script that sleeps `ms`; returns
        the answers that were not (200, its echo) and the peak of backend
        connections weft had open meanwhile."""
        results = {}
        peak = [0]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], unix_sockets_of(self.weft.process.pid))
                time.sleep(0.005)

        def one(i):
            try:
                c = Client(self.port, timeout=LOAD_BOUND)
                try:
                    c.send(get(f"/echo.php?v=req-{i}&ms={ms}", host=f"{host}.test"))
                    r = c.response()
                    results[i] = (r.status, r.body)
                finally:
                    c.close()
            except Exception as e:  # reported with the others
                results[i] = (None, repr(e).encode())

        sampler = threading.Thread(target=sample)
        sampler.start()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
        deadline = time.monotonic() + LOAD_BOUND
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        done.set()
        sampler.join()
        bad = {i: results.get(i, "no answer") for i in range(count)
               if results.get(i) != (200, f"req-{i}".encode())}
        return bad, peak[0]


class SmallPool(PoolTestCase):
    """pm.max_children = 4 below max_conns = 8: four of weft's connections
    wait in the backlog while the four others are answered. Those must not
    be kept idle (nor handed on to the queue) while the backlog waits; a
    keepalive_timeout of 60 s leaves that to the rule alone."""

    CONF = ("threads = 2\nlistener 127.0.0.1:{port}\n" +
            upstream("small", keepalive=8, max_conns=8, keepalive_timeout="60s") + site("small"))
    POOLS = {"small": 4}

    def test_fifty_requests_through_four_children_all_answered_well_within_read_timeout(self):
        for round in range(2):  # the second starts with whatever the first kept
            bad, _ = self.load("small")
            self.assertEqual(bad, {}, f"round {round}\n{self.weft.stderr()}")
        # Nothing waits any more: weft may keep what it holds, never more
        # connections than the pool has children.
        self.pools["small"].wait_connections(lambda n: n <= 4, what="at most 4 (children)")


class BigPool(PoolTestCase):
    """pm.max_children = 8 above max_conns = 4: keep-alive as usual, never
    more than max_conns connections open."""

    CONF = ("threads = 2\nlistener 127.0.0.1:{port}\n" +
            upstream("big", keepalive=4, max_conns=4, keepalive_timeout="60s") + site("big"))
    POOLS = {"big": 8}

    def test_fifty_requests_never_open_more_than_max_conns(self):
        bad, peak = self.load("big")
        self.assertEqual(bad, {}, self.weft.stderr())
        self.assertLessEqual(peak, 4, "more backend connections than max_conns")
        self.assertGreater(peak, 0)
        # Kept: the same connections serve the next requests.
        self.pools["big"].wait_connections(lambda n: 1 <= n <= 4, what="1 to 4 kept")


class KeptClientsQueue(PoolTestCase):
    """Keep-alive clients beyond max_conns: each request of a client waits
    in the upstream's queue while the connection before it is answered. A
    queued request's watch of its client was woken by its client (on a
    ring, a readiness for bytes already received) just as a backend was
    handed to it: the hand-over's wake-up was lost, and the request, with
    every one queued behind it, waited for queue_timeout (60 s here)."""

    CONF = ("threads = 1\nlistener 127.0.0.1:{port}\n" +
            upstream("kept", keepalive=2, max_conns=2, keepalive_timeout="60s") + site("kept"))
    POOLS = {"kept": 2}

    def test_keep_alive_clients_beyond_max_conns_all_answered_well_within_queue_timeout(self):
        clients, each = 6, 40
        results = {}

        def client(k):
            got = []
            try:
                c = Client(self.port, timeout=LOAD_BOUND)
                try:
                    for i in range(each):
                        c.send(get(f"/echo.php?v=c{k}-{i}&ms=0", host="kept.test"))
                        r = c.response()
                        got.append((r.status, r.body) == (200, f"c{k}-{i}".encode()))
                finally:
                    c.close()
            except Exception as e:  # reported with the others
                got.append(repr(e))
            results[k] = got

        threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
        deadline = time.monotonic() + LOAD_BOUND
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        bad = {k: results.get(k, "no answer") for k in range(clients)
               if results.get(k) != [True] * each}
        self.assertEqual(bad, {}, self.weft.stderr())


class IdleTimeout(PoolTestCase):
    """pm.max_children = 2, both held by weft's kept connections: they are
    closed after keepalive_timeout, and another client of the pool gets a
    child then."""

    CONF = ("threads = 2\nlistener 127.0.0.1:{port}\n" +
            upstream("idle", keepalive=2, max_conns=2, keepalive_timeout="1s") + site("idle"))
    POOLS = {"idle": 2}

    def test_idle_connections_close_and_a_second_client_gets_a_child(self):
        pool = self.pools["idle"]
        # Two overlapping requests: both children bound to weft's connections.
        bad, peak = self.load("idle", count=2, ms=300)
        self.assertEqual(bad, {})
        self.assertEqual(peak, 2)
        # A client of its own, straight to the pool: served once weft's
        # kept connections are gone (fastcgi_get gives up after 10 s).
        answer = {}

        def other():
            try:
                answer["out"] = fastcgi_get(pool.socket, os.path.join(self.dir, "www/echo.php"),
                                            {"QUERY_STRING": "v=other"})
            except Exception as e:
                answer["error"] = repr(e)

        t = threading.Thread(target=other)
        t.start()
        t.join(15)
        self.assertNotIn("error", answer)
        self.assertIn("out", answer, "the second client got no child")
        self.assertTrue(answer["out"][0].endswith(b"other"), answer)
        pool.wait_connections(lambda n: n == 0, what="none after keepalive_timeout")
        # And weft connects again when asked.
        bad, _ = self.load("idle", count=4, ms=0)
        self.assertEqual(bad, {})

    def test_a_connection_kept_busy_is_not_closed_under_it(self):
        pool = self.pools["idle"]
        # Requests one after another, closer than keepalive_timeout, for
        # longer than it: the connection serving them is never closed.
        c = Client(self.port, timeout=10)
        self.addCleanup(c.close)
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            c.send(get("/echo.php?v=again", host="idle.test"))
            r = c.response()
            self.assertEqual((r.status, r.body), (200, b"again"))
            time.sleep(0.2)
        self.assertLessEqual(pool.connections(), 2)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
