#!/usr/bin/env python3
"""The files handler's `alias` and `deny` patterns (issue 15): a route's
prefix served from another directory, an exact route's alias naming the
file, deny by prefix, name and glob; what must keep working under an alias
(redirects, listing, twins, ranges, conditionals, freshness, symlink rules)
and what must never get out of it (.., encoded dots and slashes, symlinks,
nginx's /static../ trap).

    test_files_alias.py WEFT_BINARY
"""
import gzip
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, get, write  # noqa: E402

SECRET = b"TOP SECRET"

CONF = """\
threads = 2
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files / {
    }
    files /static {
        alias = {dir}/assets
        listing = on
        precompressed = on
        deny = /static/private composer.json *.less /static/**/*.md
    }
    files exact /favicon.ico {
        alias = {dir}/icons/fav.ico
    }
    files /current {
        alias = {dir}/current/
    }
}
"""


class Alias(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        www, assets = os.path.join(dir, "www"), os.path.join(dir, "assets")
        # What root + URL path would serve: never under an alias.
        write(os.path.join(www, "static", "a.css"), b"ROOT STATIC")
        write(os.path.join(www, "favicon.ico"), b"ROOT ICON")
        write(os.path.join(assets, "a.css"), b"ALIASED A")
        write(os.path.join(assets, "index.html"), b"ALIAS INDEX")
        write(os.path.join(assets, "sub", "index.html"), b"SUB INDEX")
        write(os.path.join(assets, "list", "visible.txt"), b"V")
        write(os.path.join(assets, "list", "style.less"), SECRET)
        write(os.path.join(assets, "list", "composer.json"), SECRET)
        write(os.path.join(assets, "list", ".hidden"), SECRET)
        write(os.path.join(assets, "style.less"), SECRET)
        write(os.path.join(assets, "sub", "deep.less"), SECRET)
        write(os.path.join(assets, "composer.json"), SECRET)
        write(os.path.join(assets, "docs", "x.md"), SECRET)
        write(os.path.join(assets, "docs", "a", "b.md"), SECRET)
        write(os.path.join(assets, "docs", "x.txt"), b"DOC")
        write(os.path.join(assets, "private", "key.txt"), SECRET)
        write(os.path.join(assets, ".env"), SECRET)
        write(os.path.join(assets, "b.css"), b"B" * 100)
        write(os.path.join(assets, "b.css.gz"), gzip.compress(b"B" * 100))
        write(os.path.join(assets, "fresh.txt"), b"OLD")
        write(os.path.join(assets, "range.txt"), b"0123456789")
        # Beside the alias, where escapes would land.
        write(os.path.join(dir, "secret.txt"), SECRET)
        write(os.path.join(dir, "assets-other", "secret.txt"), SECRET)
        os.symlink("../secret.txt", os.path.join(assets, "out.txt"))
        os.symlink("../assets-other", os.path.join(assets, "outdir"))
        os.symlink("a.css", os.path.join(assets, "in.css"))
        write(os.path.join(dir, "icons", "fav.ico"), b"\x00\x00\x01\x00ICON")
        # A symlinked alias a deploy switches.
        write(os.path.join(dir, "release1", "v.txt"), b"ONE")
        write(os.path.join(dir, "release2", "v.txt"), b"TWO")
        os.symlink("release1", os.path.join(dir, "current"))

    def test_the_prefix_stands_for_the_alias(self):
        for path, body in [("/static/a.css", b"ALIASED A"), ("/static/", b"ALIAS INDEX"),
                           ("/static/sub/", b"SUB INDEX"), ("/static/docs/x.txt", b"DOC"),
                           ("/static/in.css", b"ALIASED A")]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual((r.status, r.body), (200, body), r)
        c, r = self.roundtrip(get("/static/a.css"))
        self.assertEqual(r.header("content-type").split(";")[0], "text/css")
        # The rest of the site is the root's.
        c, r = self.roundtrip(get("/favicon.icon"))
        self.assertEqual(r.status, 404, r)

    def test_a_directory_without_its_slash_is_redirected_to_the_url(self):
        for path, location in [("/static", "/static/"), ("/static/sub", "/static/sub/"),
                               ("/static/sub?x=1", "/static/sub/?x=1"),
                               ("/current", "/current/")]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 301, r)
                self.assertEqual(r.header("location"), location)

    def test_an_exact_routes_alias_names_the_file(self):
        c, r = self.roundtrip(get("/favicon.ico"))
        self.assertEqual((r.status, r.body), (200, b"\x00\x00\x01\x00ICON"), r)
        self.assertEqual(r.header("content-type"), "image/x-icon")
        c, r = self.roundtrip(get("/favicon.ico/x"))
        self.assertEqual(r.status, 404, r)

    def test_deny_patterns_are_403(self):
        for path in ["/static/private", "/static/private/key.txt", "/static/style.less",
                     "/static/sub/deep.less", "/static/composer.json", "/static/list/composer.json",
                     "/static/docs/x.md", "/static/docs/a/b.md", "/static/nothing.less",
                     "/static/%63omposer.json", "/static/sub/../style.less", "/static/.env"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 403, r)
                self.assertNotIn(SECRET, r.body)

    def test_a_listing_leaves_out_what_is_denied(self):
        c, r = self.roundtrip(get("/static/list/"))
        self.assertEqual(r.status, 200, r)
        self.assertIn(b"visible.txt", r.body)
        for name in [b"style.less", b"composer.json", b".hidden"]:
            self.assertNotIn(name, r.body)
        self.assertIn(b"/static/list/", r.body)

    def test_nothing_outside_the_alias_is_reached(self):
        # nginx's alias trap: /static../x would be /srv/assets/../x there;
        # here it is not /static's at all (segments), nor are the encodings.
        for path in ["/static/../secret.txt", "/static/%2e%2e/secret.txt",
                     "/static/..%2fsecret.txt", "/static/%2e%2e%2fsecret.txt",
                     "/static%2f..%2fsecret.txt", "/static/..%5csecret.txt",
                     "/static../secret.txt", "/static-other/secret.txt",
                     "/static/out.txt", "/static/outdir/secret.txt", "/static/outdir/",
                     "/static//../secret.txt", "/static/sub/../../secret.txt"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertIn(r.status, (400, 403, 404), r)
                self.assertNotIn(SECRET, r.body)

    def test_twins_ranges_and_conditionals_under_an_alias(self):
        c, r = self.roundtrip(get("/static/b.css", extra="Accept-Encoding: gzip\r\n"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("content-encoding"), "gzip")
        self.assertEqual(gzip.decompress(r.body), b"B" * 100)
        c, r = self.roundtrip(get("/static/range.txt", extra="Range: bytes=2-4\r\n"))
        self.assertEqual((r.status, r.body), (206, b"234"), r)
        etag = r.header("etag")
        c, r = self.roundtrip(get("/static/range.txt", extra=f"If-None-Match: {etag}\r\n"))
        self.assertEqual(r.status, 304, r)

    def test_a_changed_file_is_what_the_next_request_gets(self):
        c, r = self.roundtrip(get("/static/fresh.txt"))
        self.assertEqual(r.body, b"OLD")
        write(os.path.join(self.dir, "assets", "fresh.txt"), b"NEW!")
        c, r = self.roundtrip(get("/static/fresh.txt"))
        self.assertEqual(r.body, b"NEW!")

    def test_a_symlinked_alias_follows_a_deploy(self):
        c, r = self.roundtrip(get("/current/v.txt"))
        self.assertEqual((r.status, r.body), (200, b"ONE"), r)
        link = os.path.join(self.dir, "current")
        os.symlink("release2", link + ".new")
        os.rename(link + ".new", link)
        deadline = time.monotonic() + 5
        while True:
            c, r = self.roundtrip(get("/current/v.txt"))
            if r.body == b"TWO" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual((r.status, r.body), (200, b"TWO"), r)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
