"""What the tests of conf/'s application examples share: the example file
itself, loaded from conf/ as an operator would load it, its ${VARS}
pointing at the test's temp dir and at a php-fpm8.2 pool the test starts.

    test_example_NAME.py WEFT_BINARY
"""
import email.utils
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Weft, free_port  # noqa: E402
from php_support import EXECUTED, Marks, PhpFpm, PhpTestCase, require_php_fpm  # noqa: E402

CONF_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conf")

# Curl's limit for a page of a real application: MediaWiki builds caches
# on its first requests (a bound for a stuck server, not a speed check).
SLOW_PAGE = ("--max-time", "60")


class ExampleTestCase(PhpTestCase):
    """One php-fpm8.2 pool ("php", in {dir}/php) and one weft running
    conf/EXAMPLE with environment() as its ${VARS} (WEFT_LISTEN and
    PHP_FPM_SOCKET come with it), per test class; skipped when the file
    REQUIRES names (an application's package) is missing. setUpDir() plants
    the application first (cls.port is known by then); POOL_ENV and
    POOL_ADMIN ({dir} in values) go to the pool."""

    EXAMPLE = None
    REQUIRES = None  # (path, Debian package)
    CHILDREN = 3
    POOL_ENV = {}

    @classmethod
    def environment(cls, dir):
        return {}

    @classmethod
    def setUpClass(cls):
        if cls.REQUIRES and not os.path.exists(cls.REQUIRES[0]):
            raise unittest.SkipTest(f"{cls.REQUIRES[0]} is missing (Debian package "
                                    f"{cls.REQUIRES[1]}: .ci/install-deps)")
        require_php_fpm()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.realpath(cls.tmp.name)
        cls.marks = Marks(os.path.join(cls.dir, "marks"))
        cls.pools = {}
        cls.port = free_port()
        try:
            cls.setUpDir(cls.dir)
            expand = lambda values: {k: v.replace("{dir}", cls.dir) for k, v in values.items()}
            cls.pool = cls.pools["php"] = PhpFpm(cls.dir, "php", cls.CHILDREN,
                                                 env=expand(cls.POOL_ENV),
                                                 admin=expand(cls.POOL_ADMIN))
            env = {"WEFT_LISTEN": f"127.0.0.1:{cls.port}",
                   "PHP_FPM_SOCKET": f"unix:{cls.pool.socket}", **cls.environment(cls.dir)}
            cls.conf = os.path.realpath(os.path.join(CONF_DIR, cls.EXAMPLE))
            # weft inherits this process's environment: the ${VARS} for
            # its start only.
            saved = dict(os.environ)
            os.environ.update(env)
            try:
                cls.weft = Weft(cls.dir, args=["-c", cls.conf], port=cls.port)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        except BaseException:
            cls._stop_pools()
            cls.tmp.cleanup()
            raise

    # --- what the examples promise ---
    def assertStatus(self, r, status, path):
        self.assertEqual(r.status, status, f"{path}: {r.body[:300]!r}\n{self.weft.stderr()[-2000:]}")

    def assertNeverRuns(self, path, statuses=(403, 404)):
        """A script that must not run: refused, neither run nor shown."""
        r = self.curl(path)
        self.assertIn(r.status, statuses, f"{path}: {r.status} {r.body[:300]!r}")
        self.assertNotIn(EXECUTED, r.body, f"{path} ran as PHP")
        self.assertNotIn(b"<?php", r.body, f"{path}: its source was sent")
        return r

    def assertCached(self, r, cache_control, expires_in=None):
        """Cache-Control as given, and an Expires `expires_in` seconds ahead
        (a minute either way: the clock moved while the test ran)."""
        self.assertEqual(r.header("Cache-Control"), cache_control, r.headers)
        if expires_in is None:
            self.assertIsNone(r.header("Expires"), r.headers)
            return
        self.assertIsNotNone(r.header("Expires"), r.headers)
        expires = email.utils.parsedate_to_datetime(r.header("Expires")).timestamp()
        self.assertLess(abs(expires - (time.time() + expires_in)), 60, r.header("Expires"))
