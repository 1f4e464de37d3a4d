#!/usr/bin/env python3
"""weft's fastcgi handler in front of a real php-fpm8.2: which paths reach
PHP and which never do (missing scripts, uploads and static files, denied
prefixes, dotfiles, the index script), from a config file or the command
line.

    test_php_paths.py WEFT_BINARY
"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Client, Weft, free_port, get  # noqa: E402
from php_support import (NOT_PHP, SECRET, PhpFpm, SiteTestCase, install_site,  # noqa: E402
                         require_php_fpm)


class Paths(SiteTestCase):
    """Which paths reach PHP: only existing scripts under the root."""

    def test_a_missing_script_is_404_from_weft(self):
        for path in ["/nope.php", "/nope.php/extra", "/sub/nope.php", "/nope/x.php"]:
            with self.subTest(path=path):
                r = self.curl(path)
                self.assertEqual(r.status, 404)
                # PHP-FPM's own answer to a missing script.
                self.assertNotIn(b"File not found", r.body)
        self.assertNotIn("Primary script unknown", self.pools["php"].log())

    def test_a_file_under_a_script_like_path_never_runs_as_php(self):
        # cgi.fix_pathinfo: PHP-FPM given SCRIPT_FILENAME .../a.jpg/x.php would
        # run a.jpg; weft must find that x.php does not exist.
        for path in ["/uploads/a.jpg/x.php", "/uploads/a.jpg/x.php/y", "/uploads/a.jpg/.php",
                     "/uploads/a.jpg%2fx.php", "/uploads/a.jpg%00.php", "/uploads/notes.txt/x.php"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertNeverPhp(r, path)
                self.assertIn(r.status, (400, 403, 404), r)

    def test_a_path_under_a_static_file_is_never_php(self):
        for path in ["/uploads/a.jpg/x", "/uploads/a.jpg/"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertNeverPhp(r, path)
                self.assertIn(r.status, (200, 404), r)

    def test_static_files_are_served_as_they_are(self):
        for path, media, body in [("/style.css", "text/css", b"body { color: red }\n"),
                                  ("/uploads/notes.txt", "text/plain", NOT_PHP),
                                  ("/uploads/a.jpg", "image/jpeg", NOT_PHP)]:
            with self.subTest(path=path):
                r = self.curl(path)
                self.assertEqual(r.status, 200)
                self.assertEqual(r.body, body)
                self.assertEqual((r.header("content-type") or "").split(";")[0].strip(), media)

    def test_denied_prefixes_are_403(self):
        for path in ["/data", "/data/", "/data/secret.txt", "/data/x.php", "/data/nothing.php",
                     "/conf/local.php", "/./data/x.php", "/sub/../data/x.php", "/%64ata/x.php",
                     "//data/x.php"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 403, r)
                self.assertNeverPhp(r, path)
                self.assertNotIn(SECRET, r.body)

    def test_dotfiles_are_403(self):
        for path in ["/.env", "/.git/config", "/hidden/.secret.php", "/.git/"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 403, r)
                self.assertNeverPhp(r, path)
                self.assertNotIn(SECRET, r.body)

    def test_the_index_script(self):
        s = self.php_vars("/")["server"]
        self.assertEqual(s["SCRIPT_NAME"], "/index.php")
        self.assertEqual(s["REQUEST_URI"], "/")
        s = self.php_vars("/sub/?q=1")["server"]
        self.assertEqual(s["SCRIPT_NAME"], "/sub/index.php")
        self.assertEqual(s["SCRIPT_FILENAME"], os.path.join(self.www, "sub", "index.php"))
        self.assertEqual(s["QUERY_STRING"], "q=1")

    def test_a_directory_without_its_slash_is_redirected(self):
        c, r = self.roundtrip(get("/sub"))
        self.assertEqual(r.status, 301, r)
        self.assertTrue((r.header("location") or "").endswith("/sub/"), r)

    def test_a_missing_path_without_fallback_is_404(self):
        r = self.curl("/some/route")
        self.assertEqual(r.status, 404)


class CommandLine(unittest.TestCase):
    """weft --listen --root --php: a PHP site with no config file."""

    def test_a_php_site_from_the_command_line(self):
        require_php_fpm()
        with tempfile.TemporaryDirectory() as tmp:
            dir = os.path.realpath(tmp)
            www = os.path.join(dir, "www")
            install_site(www)
            pool = PhpFpm(dir, "cli", children=2)
            try:
                port = free_port()
                weft = Weft(dir, args=["--listen", f"127.0.0.1:{port}", "--root", www,
                                       "--php", f"unix:{pool.socket}"], port=port)
                try:
                    c = Client(port)
                    c.send(get("/info.php/x?y=1") + get("/") + get("/style.css") +
                           get("/nope.php"))
                    r = c.response()
                    self.assertEqual(r.status, 200, r)
                    s = json.loads(r.body)["server"]
                    self.assertEqual((s["SCRIPT_NAME"], s["PATH_INFO"], s["QUERY_STRING"]),
                                     ("/info.php", "/x", "y=1"))
                    self.assertEqual(s["SCRIPT_FILENAME"], os.path.join(www, "info.php"))
                    r = c.response()
                    self.assertEqual(json.loads(r.body)["server"]["SCRIPT_NAME"], "/index.php")
                    r = c.response()
                    self.assertEqual((r.status, r.body), (200, b"body { color: red }\n"))
                    self.assertEqual(c.response().status, 404)
                    c.close()
                finally:
                    self.assertEqual(weft.stop(), 0, weft.stderr())
            finally:
                pool.stop()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
