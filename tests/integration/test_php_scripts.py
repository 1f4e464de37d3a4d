#!/usr/bin/env python3
"""A fastcgi handler's `scripts` allow-list, `deny` patterns and `alias`
(issue 15), against a real php-fpm8.2: only the listed entry points run
(an index script and PATH_INFO included), an unlisted script that exists is
404 and never its source nor the front controller, and an aliased
application sees SCRIPT_NAME as the URL's and SCRIPT_FILENAME and
DOCUMENT_ROOT in the alias (symlinks resolved).

    test_php_scripts.py WEFT_BINARY
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import get  # noqa: E402
from php_support import (NOT_PHP, SECRET, UPSTREAM_PHP, PhpTestCase,  # noqa: E402
                         install_fixtures)

CONF = """\
threads = 2
request_timeout = 5s
listener 127.0.0.1:{port}
""" + UPSTREAM_PHP + """\
site {
    root = {dir}/www
    fastcgi /w {
        upstream = php
        scripts = /w/{index,load,api}.php /w/rest.php
        fallback = /w/index.php
        deny = composer.json *.less /w/**/*.md /w/cache
    }
    fastcgi /app {
        upstream = php
        alias = {dir}/current
        fallback = /app/index.php
        deny = /app/secret
    }
    fastcgi exact /status.php {
        upstream = php
        alias = {dir}/release1/info.php
    }
}
"""

# What never runs: it prints EXECUTED only when PHP runs it.
SOURCE_MARK = b"strrev"


class Scripts(PhpTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        www = os.path.join(dir, "www")
        install_fixtures(www, {
            "w/index.php": "info.php", "w/load.php": "info.php", "w/api.php": "info.php",
            "w/rest.php": "info.php", "w/sub/index.php": "info.php",
            "w/includes/Setup.php": NOT_PHP, "w/lib/Internal.php": NOT_PHP,
            "w/maintenance/run.php": NOT_PHP,
            "w/composer.json": SECRET, "w/skins/a.less": SECRET,
            "w/extensions/X/README.md": SECRET, "w/cache/x.txt": SECRET,
            "w/style.css": b"CSS",
            # What root + URL path would run: never under an alias.
            "app/info.php": NOT_PHP,
        })
        install_fixtures(os.path.join(dir, "release1"), {
            "info.php": "info.php", "index.php": "info.php", "sub/index.php": "info.php",
            "style.css": b"APP CSS", "secret/x.txt": SECRET,
        })
        os.symlink("release1", os.path.join(dir, "current"))

    def server(self, path):
        r = self.curl(path)
        self.assertEqual(r.status, 200, r.body[:300])
        return json.loads(r.body)["server"]

    def assertNeverRuns(self, path, status):
        c, r = self.roundtrip(get(path))
        self.assertEqual(r.status, status, r)
        self.assertNotIn(b"EXECUTED", r.body)
        self.assertNotIn(SOURCE_MARK, r.body)
        self.assertNotIn(b"SCRIPT_NAME", r.body)  # nor the front controller

    def test_the_listed_scripts_run(self):
        for name in ["index", "load", "api"]:
            with self.subTest(name=name):
                s = self.server(f"/w/{name}.php?x=1")
                self.assertEqual(s["SCRIPT_NAME"], f"/w/{name}.php")
                self.assertEqual(s["SCRIPT_FILENAME"],
                                 os.path.join(self.dir, "www", "w", f"{name}.php"))

    def test_a_listed_script_with_path_info(self):
        s = self.server("/w/rest.php/v1/page")
        self.assertEqual((s["SCRIPT_NAME"], s["PATH_INFO"]), ("/w/rest.php", "/v1/page"))

    def test_an_unlisted_script_is_404_never_its_source_nor_the_fallback(self):
        for path in ["/w/includes/Setup.php", "/w/lib/Internal.php", "/w/lib/Internal.php/x",
                     "/w/maintenance/run.php", "/w/sub/index.php", "/w/sub/",
                     "/w/lib/Internal.php?x=1"]:
            with self.subTest(path=path):
                self.assertNeverRuns(path, 404)
        self.assertNotIn("Primary script unknown", self.pools["php"].log())

    def test_the_index_script_is_checked_as_what_it_runs(self):
        s = self.server("/w/")
        self.assertEqual(s["SCRIPT_NAME"], "/w/index.php")

    def test_what_is_no_script_goes_to_the_fallback(self):
        s = self.server("/w/wiki/Main_Page")
        self.assertEqual(s["SCRIPT_NAME"], "/w/index.php")
        self.assertEqual(s["REQUEST_URI"], "/w/wiki/Main_Page")
        r = self.curl("/w/style.css")
        self.assertEqual((r.status, r.body), (200, b"CSS"))

    def test_deny_patterns_on_scripts_and_statics(self):
        for path in ["/w/composer.json", "/w/skins/a.less", "/w/extensions/X/README.md",
                     "/w/cache/x.txt", "/w/cache", "/w/index.php/a.less", "/w/nothing.less"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 403, r)
                self.assertNotIn(SECRET, r.body)
                self.assertNotIn(b"SCRIPT_NAME", r.body)

    def test_an_aliased_application(self):
        release = os.path.join(self.dir, "release1")
        s = self.server("/app/info.php/p/q?y=2")
        self.assertEqual(s["SCRIPT_NAME"], "/app/info.php")
        self.assertEqual(s["PATH_INFO"], "/p/q")
        # The alias with its symlink resolved, as the root's is.
        self.assertEqual(s["SCRIPT_FILENAME"], os.path.join(release, "info.php"))
        self.assertEqual(s["DOCUMENT_ROOT"], release)
        self.assertEqual(s["REQUEST_URI"], "/app/info.php/p/q?y=2")
        s = self.server("/app/")
        self.assertEqual((s["SCRIPT_NAME"], s["SCRIPT_FILENAME"]),
                         ("/app/index.php", os.path.join(release, "index.php")))
        s = self.server("/app/sub/")
        self.assertEqual(s["SCRIPT_FILENAME"], os.path.join(release, "sub", "index.php"))
        s = self.server("/app/some/route")
        self.assertEqual((s["SCRIPT_NAME"], s["SCRIPT_FILENAME"]),
                         ("/app/index.php", os.path.join(release, "index.php")))
        r = self.curl("/app/style.css")
        self.assertEqual((r.status, r.body), (200, b"APP CSS"))
        for path, location in [("/app", "/app/"), ("/app/sub", "/app/sub/")]:
            c, r = self.roundtrip(get(path))
            self.assertEqual((r.status, r.header("location")), (301, location), r)
        for path in ["/app/secret/x.txt", "/app/../current/secret/x.txt"]:
            c, r = self.roundtrip(get(path))
            self.assertIn(r.status, (403, 404), r)
            self.assertNotIn(SECRET, r.body)

    def test_an_exact_routes_alias_names_the_script(self):
        s = self.server("/status.php?z=3")
        self.assertEqual(s["SCRIPT_NAME"], "/status.php")
        self.assertEqual(s["SCRIPT_FILENAME"], os.path.join(self.dir, "release1", "info.php"))
        self.assertEqual(s["DOCUMENT_ROOT"], os.path.join(self.dir, "release1"))
        c, r = self.roundtrip(get("/status.php/x"))
        self.assertEqual(r.status, 404, r)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
