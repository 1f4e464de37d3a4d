#!/usr/bin/env python3
"""conf/nextcloud.conf as it is, in front of a stand-in Nextcloud tree
(Nextcloud is not packaged in Debian): its entry points say which file ran
with which CGI params, through a php-fpm8.2 pool the test starts. WebDAV
under /remote.php with PATH_INFO, any method; the front controller for
pretty URLs; the .well-known redirects; the code, config and data dirs
404; a library's script never runs; assets static with half a year's
Cache-Control; the security headers on every response.

    test_example_nextcloud.py WEFT_BINARY
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_support import ExampleTestCase  # noqa: E402
from php_support import NOT_PHP, SECRET, install_fixtures  # noqa: E402

ENTRY_POINTS = ["index.php", "remote.php", "public.php", "cron.php", "status.php", "ocs/v1.php",
                "ocs/v2.php", "core/ajax/update.php", "updater/index.php",
                "ocs-provider/index.php", "ocm-provider/index.php"]
SECURITY_HEADERS = {"Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
                    "X-Frame-Options": "SAMEORIGIN", "X-Permitted-Cross-Domain-Policies": "none",
                    "X-Robots-Tag": "noindex, nofollow", "X-XSS-Protection": "1; mode=block"}
CSS = b".app { display: flex }\n"
WOFF2 = b"wOF2 a font"
HALF_A_YEAR = "public, max-age=15778463"


class Nextcloud(ExampleTestCase):
    EXAMPLE = "nextcloud.conf"

    @classmethod
    def environment(cls, dir):
        return {"NEXTCLOUD_ROOT": os.path.join(dir, "nextcloud")}

    @classmethod
    def setUpDir(cls, dir):
        cls.root = os.path.join(dir, "nextcloud")
        layout = {name: "standin.php" for name in ENTRY_POINTS}
        layout.update({
            "lib/base.php": NOT_PHP,
            "3rdparty/autoload.php": NOT_PHP,
            "config/config.php": NOT_PHP,
            "templates/layout.php": NOT_PHP,
            "apps/files/lib/Controller.php": NOT_PHP,
            "apps/files/appinfo/routes.php": NOT_PHP,
            "console.php": NOT_PHP,
            "occ": NOT_PHP,
            "data/alice/files/secret.txt": SECRET,
            "data/nextcloud.log": SECRET,
            "build/notes.txt": SECRET,
            "tests/notes.txt": SECRET,
            ".htaccess": SECRET,
            ".user.ini": SECRET,
            "robots.txt": b"User-agent: *\nDisallow: /\n",
            "core/css/server.css": CSS,
            "core/js/main.js": b"console.log(1)\n",
            "core/img/logo.svg": b"<svg/>",
            "core/fonts/inter.woff2": WOFF2,
            "apps/files/img/app.svg": b"<svg/>",
            "apps/files/appinfo/info.xml": SECRET,
            "AUTHORS": SECRET,
            ".well-known/acme-challenge/token-123": b"token-123.key\n",
        })
        install_fixtures(cls.root, layout)

    def ran(self, r, script, path):
        self.assertStatus(r, 200, path)
        self.assertSecurityHeaders(r, path)
        v = json.loads(r.body)
        self.assertEqual(v["ran"], os.path.join(self.root, script), path)
        return v

    def run_path(self, path, script, *args):
        return self.ran(self.curl(path, *args), script, path)["server"]

    def assertSecurityHeaders(self, r, path):
        for name, value in SECURITY_HEADERS.items():
            self.assertEqual(r.header(name), value, f"{path}: {name}")
        self.assertIsNone(r.header("X-Powered-By"), path)

    # --- what runs ---
    def test_webdav_under_remote_php(self):
        s = self.run_path("/remote.php/dav/files/alice/Photos/cat.jpg", "remote.php")
        self.assertEqual(s["SCRIPT_NAME"], "/remote.php")
        self.assertEqual(s["PATH_INFO"], "/dav/files/alice/Photos/cat.jpg")
        self.assertEqual(s["modHeadersAvailable"], "true")
        self.assertEqual(s["front_controller_active"], "true")

    def test_webdav_methods_and_an_upload(self):
        s = self.run_path("/remote.php/dav/files/alice/", "remote.php", "-X", "PROPFIND",
                          "-H", "Depth: 1")
        self.assertEqual(s["REQUEST_METHOD"], "PROPFIND")
        body = os.path.join(self.dir, "upload.bin")
        with open(body, "wb") as f:
            f.write(b"x" * (3 << 20))
        r = self.curl("/remote.php/dav/files/alice/big.bin", "-T", body)
        v = self.ran(r, "remote.php", "PUT")
        self.assertEqual(v["server"]["REQUEST_METHOD"], "PUT")
        self.assertEqual(v["body_length"], 3 << 20)

    def test_a_webdav_file_named_like_an_asset_is_no_asset(self):
        r = self.curl("/remote.php/dav/files/alice/style.css")
        self.ran(r, "remote.php", "style.css")
        self.assertNotEqual(r.header("Cache-Control"), HALF_A_YEAR)

    def test_pretty_urls_go_to_the_front_controller(self):
        s = self.run_path("/apps/files/?dir=/Photos", "index.php")
        self.assertEqual(s["SCRIPT_NAME"], "/index.php")
        self.assertEqual(s["REQUEST_URI"], "/apps/files/?dir=/Photos")
        self.assertEqual(s["front_controller_active"], "true")
        s = self.run_path("/index.php/apps/files/", "index.php")
        self.assertEqual(s["PATH_INFO"], "/apps/files/")
        # A directory of code without an index.php is a route too.
        s = self.run_path("/apps/files/", "index.php")
        self.assertEqual(s["REQUEST_URI"], "/apps/files/")

    def test_no_other_file_is_served(self):
        for path in ("/apps/files/appinfo/info.xml", "/AUTHORS", "/core/doc/readme.txt"):
            with self.subTest(path=path):
                r = self.curl(path)
                self.assertNotIn(SECRET, r.body)
                self.ran(r, "index.php", path)

    def test_the_entry_points(self):
        for path, script in [("/", "index.php"), ("/status.php", "status.php"),
                             ("/public.php", "public.php"), ("/cron.php", "cron.php"),
                             ("/ocs/v1.php/cloud/user", "ocs/v1.php"),
                             ("/ocs/v2.php/apps/notifications", "ocs/v2.php"),
                             ("/core/ajax/update.php", "core/ajax/update.php"),
                             ("/updater/", "updater/index.php"),
                             ("/ocs-provider/", "ocs-provider/index.php"),
                             ("/ocm-provider/", "ocm-provider/index.php")]:
            with self.subTest(path=path):
                self.run_path(path, script)

    # --- redirects ---
    def assertRedirect(self, path, location):
        r = self.curl(path)
        self.assertStatus(r, 301, path)
        self.assertEqual(r.header("Location"), location)
        self.assertSecurityHeaders(r, path)

    def test_well_known_dav_redirects(self):
        self.assertRedirect("/.well-known/carddav", "/remote.php/dav/")
        self.assertRedirect("/.well-known/caldav", "/remote.php/dav/")

    def test_other_well_known_paths_go_to_the_front_controller(self):
        self.assertRedirect("/.well-known/webfinger?resource=acct:alice",
                            "/index.php/.well-known/webfinger?resource=acct:alice")
        self.assertRedirect("/.well-known/nodeinfo", "/index.php/.well-known/nodeinfo")

    def test_acme_challenges_are_files(self):
        r = self.curl("/.well-known/acme-challenge/token-123")
        self.assertStatus(r, 200, "acme-challenge")
        self.assertEqual(r.body, b"token-123.key\n")
        self.assertStatus(self.curl("/.well-known/acme-challenge/other"), 404, "other token")

    def test_remote_without_php(self):
        self.assertRedirect("/remote/dav/files", "/remote.php/remote/dav/files")

    # --- what is never served nor run ---
    def test_code_config_and_data_are_404(self):
        for path in ("/lib/base.php", "/3rdparty/autoload.php", "/config/config.php",
                     "/templates/layout.php", "/data/alice/files/secret.txt",
                     "/data/nextcloud.log", "/build/notes.txt", "/tests/notes.txt", "/data",
                     "/config/", "/lib/base.php/x", "/occ", "/console.php", "/autotest.sh",
                     "/issue_template.md", "/db_structure.xml", "/indie.json"):
            with self.subTest(path=path):
                r = self.assertNeverRuns(path, statuses=(404,))
                self.assertNotIn(SECRET, r.body)
                self.assertSecurityHeaders(r, path)

    def test_a_script_that_is_no_entry_point_never_runs(self):
        for path in ("/apps/files/lib/Controller.php", "/apps/files/appinfo/routes.php",
                     "/apps/files/lib/Controller.php/x", "/missing.php"):
            with self.subTest(path=path):
                r = self.assertNeverRuns(path, statuses=(404,))
                self.assertSecurityHeaders(r, path)

    def test_dot_files_are_denied(self):
        for path in ("/.htaccess", "/.user.ini"):
            with self.subTest(path=path):
                r = self.curl(path)
                self.assertIn(r.status, (403, 404), path)
                self.assertNotIn(SECRET, r.body)

    # --- what is static ---
    def test_assets_are_cached_for_half_a_year(self):
        for path, body in [("/core/css/server.css", CSS), ("/core/js/main.js", b"console.log(1)\n"),
                           ("/apps/files/img/app.svg", b"<svg/>")]:
            with self.subTest(path=path):
                r = self.curl(path)
                self.assertStatus(r, 200, path)
                self.assertEqual(r.body, body)
                self.assertCached(r, HALF_A_YEAR)
                self.assertSecurityHeaders(r, path)

    def test_fonts_expire_in_a_week(self):
        r = self.curl("/core/fonts/inter.woff2")
        self.assertStatus(r, 200, "woff2")
        self.assertEqual(r.body, WOFF2)
        self.assertEqual(r.header("Content-Type"), "font/woff2")
        self.assertCached(r, "max-age=604800", 604800)

    def test_a_missing_asset_goes_to_the_front_controller(self):
        s = self.run_path("/apps/theming/theme/light.css?v=3", "index.php")
        self.assertEqual(s["REQUEST_URI"], "/apps/theming/theme/light.css?v=3")

    def test_robots_txt(self):
        r = self.curl("/robots.txt")
        self.assertEqual((r.status, r.body), (200, b"User-agent: *\nDisallow: /\n"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
