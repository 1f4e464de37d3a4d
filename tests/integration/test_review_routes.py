#!/usr/bin/env python3
"""Holes a review of issue 15's routes and access rules found: a file
`deny` refuses must stay refused when asked by another name for the same
bytes: its precompressed twin asked directly (/composer.json.gz), or the
index a directory's path serves (/private/ for a denied /private/index.html);
and a bare name in `deny` (`vendor`), which before patterns denied the
prefix /vendor, still denies the directory it names and all beneath it, in
files and in a fastcgi handler against a real php-fpm8.2.

    test_review_routes.py WEFT_BINARY
"""
import gzip
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Client, ServerTestCase, get, write  # noqa: E402
from php_support import NOT_PHP, UPSTREAM_PHP, PhpTestCase, install_fixtures  # noqa: E402

SECRET = b"TOP SECRET"

CONF = """\
threads = 2
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files / {
        deny = composer.json *.less /keys/index.html private
        listing = on
    }
    files /zipped {
        deny = composer.json /zipped/closed/index.html
        precompressed = on
        index = index.html index.htm
    }
}
"""


class DenyByAnotherName(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        www = os.path.join(dir, "www")
        write(os.path.join(www, "composer.json"), SECRET)
        write(os.path.join(www, "composer.json.gz"), gzip.compress(SECRET))
        write(os.path.join(www, "composer.json.br"), SECRET)
        write(os.path.join(www, "skin", "a.less.gz"), gzip.compress(SECRET))
        write(os.path.join(www, "skin", "a.css"), b"CSS")
        write(os.path.join(www, "keys", "index.html"), SECRET)
        write(os.path.join(www, "keys", "public.txt"), b"PUBLIC")
        write(os.path.join(www, "zipped", "composer.json"), SECRET)
        write(os.path.join(www, "zipped", "composer.json.gz"), gzip.compress(SECRET))
        write(os.path.join(www, "zipped", "closed", "index.html"), SECRET)
        write(os.path.join(www, "zipped", "closed", "index.htm"), b"SECOND INDEX")
        write(os.path.join(www, "zipped", "open", "index.html"), b"OPEN INDEX")
        write(os.path.join(www, "private", "key.txt"), SECRET)
        write(os.path.join(www, "a", "private", "key.txt"), SECRET)
        write(os.path.join(www, "privateer", "x.txt"), b"NOT PRIVATE")

    def test_a_twin_of_a_denied_file_asked_by_its_name_is_403(self):
        for path in ["/composer.json.gz", "/composer.json.br", "/composer.json.GZ",
                     "/skin/a.less.gz", "/zipped/composer.json.gz", "/zipped/composer.json",
                     "/composer%2ejson.gz"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 403, r)
                self.assertNotIn(b"SECRET", r.body)
        c, r = self.roundtrip(get("/zipped/composer.json", extra="Accept-Encoding: gzip\r\n"))
        self.assertEqual(r.status, 403, r)
        c, r = self.roundtrip(get("/skin/a.css"))
        self.assertEqual((r.status, r.body), (200, b"CSS"), r)

    def test_a_listing_shows_no_twin_of_a_denied_file(self):
        c, r = self.roundtrip(get("/"))
        self.assertEqual(r.status, 200, r)
        self.assertNotIn(b"composer.json", r.body)
        c, r = self.roundtrip(get("/skin/"))
        self.assertEqual(r.status, 200, r)
        self.assertIn(b"a.css", r.body)
        self.assertNotIn(b"a.less", r.body)

    def test_a_denied_index_is_as_if_absent(self):
        # The directory's listing instead, which does not show it.
        c, r = self.roundtrip(get("/keys/"))
        self.assertEqual(r.status, 200, r)
        self.assertNotIn(SECRET, r.body)
        self.assertIn(b"public.txt", r.body)
        self.assertNotIn(b"index.html", r.body)
        # The next index name; a range or HEAD is no way round either.
        c, r = self.roundtrip(get("/zipped/closed/"))
        self.assertEqual((r.status, r.body), (200, b"SECOND INDEX"), r)
        c, r = self.roundtrip(get("/zipped/closed/", extra="Range: bytes=0-3\r\n"))
        self.assertEqual((r.status, r.body), (206, b"SECO"), r)
        c = self.connect()
        c.send(get("/zipped/closed/").replace("GET", "HEAD", 1))
        r = c.response(head=True)
        self.assertEqual((r.status, r.header("content-length")), (200, "12"), r)
        c, r = self.roundtrip(get("/zipped/open/"))
        self.assertEqual((r.status, r.body), (200, b"OPEN INDEX"), r)

    def test_a_denied_name_denies_the_directory_and_all_beneath_it(self):
        for path in ["/private", "/private/", "/private/key.txt", "/a/private/key.txt",
                     "/a/private/"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 403, r)
        c, r = self.roundtrip(get("/privateer/x.txt"))
        self.assertEqual((r.status, r.body), (200, b"NOT PRIVATE"), r)
        c, r = self.roundtrip(get("/a/"))
        self.assertEqual(r.status, 200, r)
        self.assertNotIn(b"private", r.body)


PHP_CONF = """\
threads = 2
request_timeout = 5s
listener 127.0.0.1:{port}
""" + UPSTREAM_PHP + """\
site {
    root = {dir}/www
    fastcgi / {
        upstream = php
        deny = vendor composer.json
    }
}
"""


class PhpDenyByName(PhpTestCase):
    CONF = PHP_CONF

    @classmethod
    def setUpDir(cls, dir):
        www = os.path.join(dir, "www")
        install_fixtures(www, {"index.php": "info.php", "vendor/autoload.php": NOT_PHP,
                               "lib/vendor/run.php": NOT_PHP,
                               "composer.json": SECRET, "composer.json.gz": gzip.compress(SECRET)})

    def test_nothing_beneath_a_denied_name_runs_or_is_sent(self):
        for path in ["/vendor/autoload.php", "/vendor/", "/lib/vendor/run.php",
                     "/vendor/autoload.php/x", "/composer.json.gz"]:
            with self.subTest(path=path):
                c = Client(self.port)
                self.addCleanup(c.close)
                c.send(get(path))
                r = c.response()
                self.assertEqual(r.status, 403, r)
                self.assertNotIn(b"EXECUTED", r.body)
                self.assertNotIn(SECRET, r.body)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
