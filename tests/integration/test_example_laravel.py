#!/usr/bin/env python3
"""conf/laravel.conf as it is, in front of a stand-in front controller
(Laravel and Symfony are not packaged in Debian): public/index.php says
which file ran with which CGI params, through a php-fpm8.2 pool the test
starts. Every route goes to index.php, files that exist are served, no
other script runs (a stray info.php, a vendor file), a 404 of weft's own
is the application's page, dot files are denied, and the site's headers
are on every response while X-Powered-By is on none.

    test_example_laravel.py WEFT_BINARY
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_support import ExampleTestCase  # noqa: E402
from php_support import NOT_PHP, SECRET, install_fixtures  # noqa: E402

CSS = b"body { margin: 0 }\n"


class FrontController(ExampleTestCase):
    EXAMPLE = "laravel.conf"

    @classmethod
    def environment(cls, dir):
        return {"APP_ROOT": os.path.join(dir, "app", "public")}

    @classmethod
    def setUpDir(cls, dir):
        cls.public = os.path.join(dir, "app", "public")
        install_fixtures(os.path.join(dir, "app"), {
            "public/index.php": "standin.php",
            "public/css/app.css": CSS,
            "public/robots.txt": b"User-agent: *\n",
            "public/info.php": NOT_PHP,
            "public/vendor/phpunit/eval-stdin.php": NOT_PHP,
            "public/.env": SECRET,
            "public/.git/config": SECRET,
            "public/.well-known/security.txt": b"Contact: mailto:security@example.com\n",
            ".env": SECRET,
            "routes/web.php": NOT_PHP,
        })

    def front(self, path, *args, status=200):
        r = self.curl(path, *args)
        self.assertStatus(r, status, path)
        self.assertEqual(r.header("Content-Type"), "application/json", path)
        v = json.loads(r.body)
        self.assertEqual(v["ran"], os.path.join(self.public, "index.php"))
        self.assertSiteHeaders(r, path)
        return v["server"]

    def assertSiteHeaders(self, r, path):
        self.assertEqual(r.header("X-Frame-Options"), "SAMEORIGIN", path)
        self.assertEqual(r.header("X-Content-Type-Options"), "nosniff", path)
        self.assertIsNone(r.header("X-Powered-By"), path)

    # --- what runs ---
    def test_a_route_goes_to_the_front_controller(self):
        s = self.front("/users/7/edit?tab=2")
        self.assertEqual(s["SCRIPT_NAME"], "/index.php")
        self.assertEqual(s["SCRIPT_FILENAME"], os.path.join(self.public, "index.php"))
        self.assertEqual(s["DOCUMENT_ROOT"], self.public)
        self.assertEqual(s["REQUEST_URI"], "/users/7/edit?tab=2")
        self.assertEqual(s["QUERY_STRING"], "tab=2")

    def test_the_root_runs_index_php(self):
        self.assertEqual(self.front("/")["REQUEST_URI"], "/")

    def test_index_php_with_a_path_info(self):
        s = self.front("/index.php/api/items")
        self.assertEqual(s["SCRIPT_NAME"], "/index.php")
        self.assertEqual(s["PATH_INFO"], "/api/items")

    def test_a_post_reaches_the_front_controller(self):
        r = self.curl("/login", "--data-binary", "email=a%40b.c&password=x")
        self.assertStatus(r, 200, "/login")
        v = json.loads(r.body)
        self.assertEqual(v["server"]["REQUEST_METHOD"], "POST")
        self.assertEqual(v["body_length"], 24)

    # --- what is static ---
    def test_existing_files_are_served_as_they_are(self):
        r = self.curl("/css/app.css")
        self.assertStatus(r, 200, "/css/app.css")
        self.assertEqual(r.body, CSS)
        self.assertSiteHeaders(r, "/css/app.css")
        r = self.curl("/robots.txt")
        self.assertEqual((r.status, r.body), (200, b"User-agent: *\n"))
        r = self.curl("/.well-known/security.txt")
        self.assertStatus(r, 200, "/.well-known/security.txt")

    # --- what never runs ---
    def test_no_other_script_runs(self):
        # The application's 404 (error_page 404 /index.php): status kept.
        for path in ("/info.php", "/vendor/phpunit/eval-stdin.php", "/missing.php"):
            with self.subTest(path=path):
                r = self.assertNeverRuns(path, statuses=(404,))
                self.assertEqual(json.loads(r.body)["ran"],
                                 os.path.join(self.public, "index.php"))
                self.assertSiteHeaders(r, path)

    def test_the_404_page_knows_the_path_asked_for(self):
        # As nginx's error_page: the internal GET keeps the request's
        # REQUEST_URI ($request_uri), so the router of the application can
        # say which page is missing; with REQUEST_URI /index.php, Laravel
        # would render its home page under a 404.
        r = self.curl("/missing.php?from=link")
        self.assertStatus(r, 404, "/missing.php")
        s = json.loads(r.body)["server"]
        self.assertEqual(s["SCRIPT_NAME"], "/index.php")
        self.assertEqual(s["REQUEST_METHOD"], "GET")
        self.assertEqual(s["REQUEST_URI"], "/missing.php?from=link")

    def test_dot_files_are_denied(self):
        for path in ("/.env", "/.git/config"):
            with self.subTest(path=path):
                r = self.curl(path)
                self.assertStatus(r, 403, path)
                self.assertNotIn(SECRET, r.body)
                self.assertSiteHeaders(r, path)

    def test_nothing_above_public_is_reached(self):
        for path in ("/../.env", "/%2e%2e/.env", "/../routes/web.php"):
            with self.subTest(path=path):
                r = self.curl(path, "--path-as-is")
                self.assertNotIn(SECRET, r.body)
                self.assertNotIn(b"EXECUTED", r.body)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
