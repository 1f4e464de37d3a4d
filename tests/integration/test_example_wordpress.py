#!/usr/bin/env python3
"""conf/wordpress.conf as it is, in front of Debian's WordPress (the
wordpress package, /usr/share/wordpress, the conf's default root) through
a php-fpm8.2 pool the test starts: permalinks, wp-admin and wp-login.php
run WordPress's real entry points; the assets of wp-includes and wp-admin
are static with nginx's `expires max`; wp-content is the test's own dir
(the conf's alias) where no script runs, uploads above all; wp-includes'
PHP and wp-config.php are denied.

There is no database server: WordPress starts, finds none, and answers
its own "Error establishing a database connection" page (status 500),
which only PHP running the entry point through wp-load.php and
wp-settings.php can print. Debian's wp-config.php reads its settings
from /etc/wordpress; the test's pool defines ABSPATH in an
auto_prepend_file instead, naming a dir of links to /usr/share/wordpress
whose wp-config.php is the test's (a database socket that does not
exist), so nothing under /etc or /var/lib is read or written.

    test_example_wordpress.py WEFT_BINARY
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_support import ExampleTestCase  # noqa: E402
from php_support import NOT_PHP, SECRET  # noqa: E402

WORDPRESS = "/usr/share/wordpress"
DB_ERROR = b"Error establishing a database connection"
TEN_YEARS = 3650 * 24 * 3600
PNG = b"\x89PNG\r\n\x1a\n an upload"
CSS = b".theme { color: teal }\n"


class WordPress(ExampleTestCase):
    EXAMPLE = "wordpress.conf"
    REQUIRES = (os.path.join(WORDPRESS, "wp-settings.php"), "wordpress")
    POOL_ADMIN = {"auto_prepend_file": "{dir}/prepend.php"}

    @classmethod
    def environment(cls, dir):
        return {"WORDPRESS_CONTENT": os.path.join(dir, "wp-content")}

    @classmethod
    def setUpDir(cls, dir):
        abspath, content = os.path.join(dir, "wordpress"), os.path.join(dir, "wp-content")
        os.makedirs(abspath)
        for name in os.listdir(WORDPRESS):
            if name != "wp-config.php":
                os.symlink(os.path.join(WORDPRESS, name), os.path.join(abspath, name))
        with open(os.path.join(abspath, "wp-config.php"), "w") as f:
            f.write("<?php\n"
                    "define('DB_NAME', 'wordpress');\n"
                    "define('DB_USER', 'wordpress');\n"
                    "define('DB_PASSWORD', 'none');\n"
                    f"define('DB_HOST', 'localhost:{dir}/no-mysqld.sock');\n"
                    f"define('WP_CONTENT_DIR', '{content}');\n"
                    "$table_prefix = 'wp_';\n"
                    "require_once ABSPATH . 'wp-settings.php';\n")
        with open(os.path.join(dir, "prepend.php"), "w") as f:
            f.write(f"<?php\ndefine('ABSPATH', '{abspath}/');\n")
        files = {"uploads/2026/11/photo.png": PNG, "uploads/2026/11/shell.php": NOT_PHP,
                 "uploads/shell.phtml": NOT_PHP, "uploads/shell.php.png": PNG,
                 "themes/plain/style.css": CSS, "themes/plain/functions.php": NOT_PHP,
                 "plugins/tool/run.php": NOT_PHP, "index.php": NOT_PHP,
                 "uploads/.htaccess": SECRET}
        for rel, data in files.items():
            path = os.path.join(content, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)

    def assertWordPressRan(self, path):
        r = self.curl(path)
        self.assertStatus(r, 500, path)
        self.assertIn(DB_ERROR, r.body, path)
        return r

    # --- what runs: WordPress's entry points ---
    def test_the_home_page_runs_index_php(self):
        self.assertWordPressRan("/")

    def test_a_pretty_permalink_goes_to_index_php(self):
        for path in ("/2026/11/24/hello-world/", "/category/news/", "/hello-world/?replytocom=1",
                     "/feed/"):
            with self.subTest(path=path):
                self.assertWordPressRan(path)

    def test_wp_admin_and_wp_login(self):
        for path in ("/wp-admin/", "/wp-login.php", "/wp-admin/edit.php"):
            with self.subTest(path=path):
                self.assertWordPressRan(path)

    def test_wp_cron_php_answers_before_it_works(self):
        # wp-cron.php sends its headers and finishes the response
        # (fastcgi_finish_request) before it loads WordPress.
        r = self.curl("/wp-cron.php")
        self.assertStatus(r, 200, "/wp-cron.php")
        self.assertEqual(r.header("Cache-Control"), "no-cache, must-revalidate, max-age=0")

    # --- what is static ---
    def test_wp_includes_assets_are_static_for_ten_years(self):
        path = "/wp-includes/css/dashicons.min.css"
        r = self.curl(path)
        self.assertStatus(r, 200, path)
        with open(WORDPRESS + path, "rb") as f:
            self.assertEqual(r.body, f.read())
        self.assertTrue(r.header("Content-Type").startswith("text/css"), r.headers)
        self.assertCached(r, "public, max-age=315360000", TEN_YEARS)

    def test_wp_admin_assets_are_static_for_ten_years(self):
        r = self.curl("/wp-admin/images/wordpress-logo.svg")
        self.assertStatus(r, 200, "wordpress-logo.svg")
        self.assertCached(r, "public, max-age=315360000", TEN_YEARS)

    def test_other_static_files_of_the_code_have_no_cache_headers(self):
        r = self.curl("/readme.html")
        self.assertStatus(r, 200, "/readme.html")
        self.assertIsNone(r.header("Expires"))
        self.assertIsNone(r.header("Cache-Control"))

    def test_wp_content_is_the_alias(self):
        r = self.curl("/wp-content/uploads/2026/11/photo.png")
        self.assertStatus(r, 200, "photo.png")
        self.assertEqual(r.body, PNG)
        self.assertCached(r, "public, max-age=315360000", TEN_YEARS)
        r = self.curl("/wp-content/themes/plain/style.css")
        self.assertStatus(r, 200, "style.css")
        self.assertEqual(r.body, CSS)
        # A page of PHP's gets none of the asset routes' ten years, only
        # WordPress's own no-cache (an Expires in 1984).
        r = self.assertWordPressRan("/2026/11/photo.png")
        self.assertNotIn("315360000", r.header("Cache-Control") or "")
        self.assertIn("1984", r.header("Expires") or "")

    # --- what never runs ---
    def test_no_script_in_wp_content_ever_runs(self):
        for path in ("/wp-content/uploads/2026/11/shell.php", "/wp-content/uploads/shell.phtml",
                     "/wp-content/uploads/shell.php.png/x.php", "/wp-content/uploads/2026/11/shell.php/x",
                     "/wp-content/themes/plain/functions.php", "/wp-content/plugins/tool/run.php",
                     "/wp-content/index.php", "/wp-content/"):
            with self.subTest(path=path):
                self.assertNeverRuns(path)

    def test_wp_includes_scripts_are_denied(self):
        for path in ("/wp-includes/version.php", "/wp-includes/functions.php",
                     "/wp-includes/theme-compat/header.php", "/wp-config.php"):
            with self.subTest(path=path):
                r = self.curl(path)
                self.assertStatus(r, 403, path)
                self.assertNotIn(DB_ERROR, r.body)
                self.assertNotIn(b"<?php", r.body)

    def test_dot_files_are_never_served(self):
        r = self.curl("/wp-content/uploads/.htaccess")
        self.assertStatus(r, 403, "/wp-content/uploads/.htaccess")
        self.assertNotIn(SECRET, r.body)
        # Debian links /usr/share/wordpress/.htaccess to /etc/wordpress:
        # out of the root, so no file weft shows; the path is WordPress's.
        r = self.curl("/.htaccess")
        self.assertNotIn(b"RewriteRule", r.body)
        self.assertNotEqual(r.status, 200)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
