#!/usr/bin/env python3
"""Two upstreams on one php-fpm pool: idle connections one of them keeps
hold children the other waits for. With keepalive_timeout = 0 (kept until
needed) a request of the second one waited for its read_timeout and got a
504 while the first one's idle connections held every child; a stall of
either now closes the idle connections of both.

    test_php_shared_pool.py WEFT_BINARY
"""
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import get  # noqa: E402
from php_support import PhpTestCase, install_fixtures  # noqa: E402

PAGE = b'<?php usleep(200000); echo "done";\n'

# Both api requests are in PHP at once, whatever the machine's load: each
# waits (up to 5 s) until two children have come, so weft must have opened a
# connection per child (a fixed sleep let a slow second request find the
# first one's connection idle, once in six runs under load).
TOGETHER = b"""<?php
$dir = __DIR__ . '/arrived';
@mkdir($dir);
touch($dir . '/' . getmypid());
$until = microtime(true) + 5;
while (count(glob($dir . '/*')) < 2 && microtime(true) < $until) usleep(10000);
echo "done";
"""

CONF = """\
threads = 2
listener 127.0.0.1:{port}
upstream front {
    server = unix:{dir}/php/php.sock
    keepalive_timeout = 0
    read_timeout = 8s
    queue_timeout = 8s
}
upstream api {
    server = unix:{dir}/php/php.sock
    keepalive_timeout = 0
}
site {
    root = {dir}/www
    fastcgi /api {
        upstream = api
    }
    fastcgi / {
        upstream = front
    }
}
"""


class SharedPool(PhpTestCase):
    CONF = CONF
    POOLS = {"php": 2}

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {"page.php": PAGE, "api/page.php": TOGETHER})

    def test_idle_connections_of_one_upstream_yield_to_the_other(self):
        # Two at once: api opens a connection per child and keeps both.
        statuses = []
        def call():
            c, r = self.roundtrip(get("/api/page.php"))
            statuses.append(r.status)
        threads = [threading.Thread(target=call) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(statuses, [200, 200])
        self.pools["php"].wait_connections(lambda n: n == 2, what="api's two kept connections")
        # Before: a 504 once front's read_timeout (8 s) ran out.
        c, r = self.roundtrip(get("/page.php"), timeout=15.0)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"done")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
