#!/usr/bin/env python3
"""The status handler's page for a browser, in Debian's headless Chromium
driven by puppeteer-core from npm: after a known load it shows a request
count above zero, no error, and redraws itself with higher counts.

puppeteer-core is installed (npm, from the npm cache when it has it) into
BUILD_DIR/npm; the test is skipped only when that install cannot be made
(no registry and no cache) or Chromium or node is missing, and says why.

    test_status_page.py WEFT_BINARY BUILD_DIR
"""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Weft, curl, node_json, npm_package  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# Node 18 (Debian 12's) or later; Chromium from Debian's packages.
PUPPETEER = "puppeteer-core@24.43.1"

CONF = """\
threads = 2
listener 127.0.0.1:{port}
site {
    response /hello {
        body = "hello"
    }
    status /server-status {
        allow_from = 127.0.0.1
        deny_from = all
    }
}
"""


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def require_browser():
    """(Chromium's path, NODE_PATH for puppeteer-core), installed into the
    BUILD_DIR of the command line (else the binary's directory); raises
    SkipTest saying what is missing. test_chat_browser.py uses it too."""
    path = chromium()
    if not path:
        raise unittest.SkipTest("chromium is not installed (.ci/install-deps installs it)")
    if not shutil.which("node") or not shutil.which("npm"):
        raise unittest.SkipTest("node and npm are not installed (.ci/install-deps)")
    build_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(
        os.path.abspath(sys.argv[1]))
    return path, npm_package(build_dir, PUPPETEER)


class StatusPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.chromium, cls.node_path = require_browser()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.realpath(cls.tmp.name)
        cls.weft = Weft(cls.dir, CONF)
        cls.port = cls.weft.port

    @classmethod
    def tearDownClass(cls):
        code = cls.weft.stop()
        cls.tmp.cleanup()
        if code != 0:
            raise AssertionError(f"weft exited {code} on SIGTERM")

    def test_the_page_draws_the_figures_and_updates(self):
        for _ in range(5):
            self.assertEqual(curl(self.port, "/hello").status, 200)
        url = f"http://127.0.0.1:{self.port}/server-status"
        seen = node_json(self, os.path.join(HERE, "status_page.js"), [url, self.chromium],
                         self.node_path, HOME=self.dir)
        # Chromium's Accept (text/html first) chose the page.
        self.assertEqual(seen["status"], 200)
        self.assertEqual(seen["contentType"], "text/html; charset=utf-8")
        self.assertEqual(seen["pageErrors"], [])
        self.assertEqual(seen["requestsFailed"], [])
        first, later = seen["first"], seen["later"]
        self.assertFalse(first["error"], first["state"])
        self.assertFalse(later["error"], later["state"])
        # The 5 /hello requests at least, and the page's own fetches since.
        self.assertGreaterEqual(int(first["requests"]), 5)
        self.assertGreater(int(later["requests"]), int(first["requests"]))
        self.assertGreaterEqual(later["updates"], first["updates"] + 2)
        # Header row, all loops, and one row per loop (threads = 2).
        self.assertEqual(later["connections"], 4)
        self.assertEqual(later["upstreams"], 1)  # no upstream: the header alone


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
