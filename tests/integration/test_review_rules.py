#!/usr/bin/env python3
"""The response rules (issue 15) as a hostile review attacked them: freshness
PHP states by Expires alone, an Expires both in `headers` and by `expires`,
line breaks in cache_control, and an expires past what a date can say.
Against a real php-fpm8.2 and the real binary.

    test_review_rules.py WEFT_BINARY
"""
import os
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import WEFT, Weft, get, write  # noqa: E402
from php_support import UPSTREAM_PHP, PhpTestCase, install_fixtures  # noqa: E402

CONF = ("""\
threads = 1
listener 127.0.0.1:{port}
""" + UPSTREAM_PHP + """\
site {
    root = {dir}/www
    fastcgi / {
        upstream = php
        cache_control = public
        expires = 1h
    }
    files /static {
        expires = 1h
        headers {
            Expires = "Thu, 01 Jan 2037 00:00:00 GMT"
        }
    }
}
""")

# A page PHP marks as expired the HTTP/1.0 way, with no Cache-Control.
EXPIRED = b"""<?php
header('Expires: Thu, 01 Jan 1970 00:00:00 GMT');
echo "expired\\n";
"""


class Freshness(PhpTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {
            "expired.php": EXPIRED,
            "fresh.php": b"<?php echo \"fresh\\n\";\n",
            "static/a.txt": b"a\n",
        })

    def test_phps_own_expires_wins_and_stays_the_only_one(self):
        # Was: PHP's Expires, then the rule's Cache-Control: public,
        # max-age=3600 and a second Expires an hour ahead: a page its
        # application marked expired became public for an hour.
        c, r = self.roundtrip(get("/expired.php"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.all("expires"), ["Thu, 01 Jan 1970 00:00:00 GMT"])
        self.assertIsNone(r.header("cache-control"))

    def test_a_response_without_its_own_gets_both(self):
        c, r = self.roundtrip(get("/fresh.php"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.all("cache-control"), ["public, max-age=3600"])
        self.assertEqual(len(r.all("expires")), 1)

    def test_an_expires_in_headers_is_the_only_one(self):
        # Was: the headers entry's Expires and the rule's, two of them.
        c, r = self.roundtrip(get("/static/a.txt"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.all("expires"), ["Thu, 01 Jan 2037 00:00:00 GMT"])
        self.assertEqual(r.all("cache-control"), ["max-age=3600"])


class ConfigErrors(unittest.TestCase):
    def check(self, handler_keys):
        with tempfile.TemporaryDirectory() as dir:
            conf = os.path.join(dir, "weft.conf")
            with open(conf, "w") as f:
                f.write(f"listener 127.0.0.1:1\nsite {{\n    root = {dir}\n"
                        f"    files / {{\n{handler_keys}    }}\n}}\n")
            return subprocess.run([WEFT, "-t", "-c", conf], capture_output=True, timeout=10)

    def test_a_line_break_in_cache_control_is_refused(self):
        # Was: accepted, and sent as it was: a field of the value's making
        # on every response (Cache-Control: public\nX-Injected: yes).
        run = self.check('        cache_control = "public\\nX-Injected: yes"\n')
        self.assertNotEqual(run.returncode, 0, run.stdout)
        self.assertIn(b"weft.conf:5:", run.stderr)
        self.assertIn(b"line break", run.stderr)

    def test_fields_that_say_how_to_read_the_body_are_not_edited(self):
        # Was: accepted; `remove Content-Encoding` on precompressed files
        # sent a gzip twin's bytes as text/plain.
        for edit in ("remove Content-Encoding", "Content-Range = bytes 0-1/2"):
            run = self.check(f"        headers {{\n            {edit}\n        }}\n")
            self.assertNotEqual(run.returncode, 0, (edit, run.stdout))
            self.assertIn(b"is the server's own", run.stderr)

    def test_an_error_page_with_a_query_is_refused(self):
        # Was: accepted, and the page looked up as the file "404.html?x=1":
        # never found, the built-in page instead.
        run = self.check("        error_page = 404 /404.html?x=1\n")
        self.assertNotEqual(run.returncode, 0, run.stdout)
        self.assertIn(b"takes no query", run.stderr)
        ok = self.check("        error_page = 404 file /nonexistent/a?b.html\n")
        self.assertEqual(ok.returncode, 0, ok.stderr)

    def test_an_expires_past_2_31_seconds_is_refused(self):
        # Was: expires = 3650000d sent max-age=315360000000 and an Expires
        # in 2020 (the year 12026 printed in 4 digits): already expired.
        run = self.check("        expires = 3650000d\n")
        self.assertNotEqual(run.returncode, 0, run.stdout)
        self.assertIn(b"expires is at most 24855d", run.stderr)
        ok = self.check("        expires = 3650d\n")
        self.assertEqual(ok.returncode, 0, ok.stderr)


def resident_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


class SharedPageFile(unittest.TestCase):
    HANDLERS = 30
    PAGE = 1 << 20

    def resident_with(self, dir, pages):
        conf = "threads = 1\nlistener 127.0.0.1:{port}\nsite {\n    root = {dir}\n"
        conf += pages
        for i in range(self.HANDLERS):
            conf += f"    files /h{i} {{\n    }}\n"
        conf += "}\n"
        weft = Weft(dir, conf)
        try:
            c = socket.create_connection(("127.0.0.1", weft.port), timeout=5)
            c.sendall(get("/h1/page.html").encode())
            self.assertIn(b" 200 ", c.recv(100))
            c.close()
            return resident_kib(weft.process.pid)
        finally:
            self.assertEqual(weft.stop(), 0)

    def test_a_sites_page_file_is_held_once(self):
        # Was: read and held for each handler of the site and each status:
        # a 6.7 MB 50x.html, 20 handlers and 4 statuses made 558 MB.
        with tempfile.TemporaryDirectory() as dir:
            write(os.path.join(dir, "h1/page.html"), b"x")
            write(os.path.join(dir, "50x.html"), b"p" * self.PAGE)
            without = self.resident_with(dir, "")
            with_pages = self.resident_with(
                dir, f"    error_page = 500 502 503 504 file {dir}/50x.html\n")
            # Once: 1 MiB; per handler and status: 124 MiB.
            self.assertLess(with_pages - without, 8 * 1024, (without, with_pages))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
