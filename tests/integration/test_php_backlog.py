#!/usr/bin/env python3
"""A connection in PHP-FPM's listen backlog under sustained load.

pm.max_children = 4 below max_conns = 8, and more clients than max_conns
sending requests back to back: a freed connection always has a waiter to go
to, so none ever goes idle. The connections beyond the children wait in the
backlog; their requests must still get a child while the load goes on, not
only once it ends.

    test_php_backlog.py WEFT_BINARY
"""
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_php_pool as pool  # noqa: E402
from http_support import Client, get  # noqa: E402

LOAD_SECONDS = 8.0
# Far below LOAD_SECONDS: a request stuck in the backlog until the load ends
# waits about LOAD_SECONDS; one given a child while it goes on, about a
# second (the upstream's claim time) plus a few scripts.
SLOWEST_BOUND = 4.0


class SustainedBacklog(pool.PoolTestCase):
    CONF = ("threads = 2\nlistener 127.0.0.1:{port}\n" +
            pool.upstream("small", keepalive=8, max_conns=8, keepalive_timeout="60s") +
            pool.site("small"))
    POOLS = {"small": 4}

    def test_a_backlogged_request_is_answered_while_the_load_goes_on(self):
        slowest = [0.0]
        failures = []
        end = time.monotonic() + LOAD_SECONDS

        def client(n):
            try:
                c = Client(self.port, timeout=LOAD_SECONDS + 10)
                try:
                    i = 0
                    while time.monotonic() < end:
                        started = time.monotonic()
                        c.send(get(f"/echo.php?v=c{n}-{i}&ms=50", host="small.test"))
                        r = c.response()
                        slowest[0] = max(slowest[0], time.monotonic() - started)
                        if (r.status, r.body) != (200, f"c{n}-{i}".encode()):
                            failures.append((r.status, r.body))
                        i += 1
                finally:
                    c.close()
            except Exception as e:  # reported with the others
                failures.append(repr(e))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(LOAD_SECONDS + 20)
        self.assertEqual(failures, [], self.weft.stderr())
        self.assertLess(slowest[0], SLOWEST_BOUND,
                        f"a request waited {slowest[0]:.1f} s of a {LOAD_SECONDS:.0f} s load")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
