#!/usr/bin/env python3
"""precompressed = on in a fastcgi handler: its static files go out as their
.gz twins to clients that accept gzip, as a files handler's do; a script
always runs, and a script's twin (x.php.gz: its source, compressed) is never
served.

    test_php_precompressed.py WEFT_BINARY
"""
import gzip
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import get  # noqa: E402
from php_support import EXECUTED, NOT_PHP, PhpTestCase, install_fixtures  # noqa: E402

STYLE = b"body { color: red }\n" * 40

CONF = """\
threads = 2
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    fastcgi / {
        pass = unix:{dir}/php/php.sock
        precompressed = on
    }
}
"""


class Precompressed(PhpTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        www = os.path.join(dir, "www")
        install_fixtures(www, {
            "style.css": STYLE,
            "style.css.gz": gzip.compress(STYLE),
            "run.php": NOT_PHP,
            "run.php.gz": gzip.compress(NOT_PHP),
        })

    def test_a_static_file_goes_out_as_its_gzip_twin(self):
        c, r = self.roundtrip(get("/style.css", extra="Accept-Encoding: gzip\r\n"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("content-encoding"), "gzip")
        self.assertIn("accept-encoding", (r.header("vary") or "").lower())
        self.assertEqual(r.header("content-type").split(";")[0], "text/css")
        self.assertEqual(gzip.decompress(r.body), STYLE)

    def test_without_accept_encoding_the_plain_file_goes_out(self):
        c, r = self.roundtrip(get("/style.css"))
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.header("content-encoding"))
        self.assertEqual(r.body, STYLE)

    def test_a_script_runs_whatever_twin_it_has(self):
        c, r = self.roundtrip(get("/run.php", extra="Accept-Encoding: gzip\r\n"))
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.header("content-encoding"))
        self.assertEqual(r.body, EXECUTED)

    def test_a_scripts_twin_is_never_served(self):
        c, r = self.roundtrip(get("/run.php.gz"))
        self.assertIn(r.status, (403, 404), r)
        self.assertNotIn(b"strrev", r.body)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
