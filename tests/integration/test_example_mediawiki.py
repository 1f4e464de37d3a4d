#!/usr/bin/env python3
"""conf/mediawiki.conf as it is, in front of Debian's MediaWiki (the
mediawiki package) installed by the test onto SQLite, through a php-fpm8.2
pool the test starts: the short URLs and the entry points run the real
wiki (an edit through api.php shows under its short URL); resources,
skin and extension assets are static with a week's cache headers; the
library code, the installer, the settings and any other script never
run; an uploaded script in images/ is inert; / redirects to the main
page and any other path is 404.

The wiki lives in the test's temp dir: its web root w/ holds links to
every entry of /usr/share/mediawiki but images/ (a dir of the test's) and
LocalSettings.php, which `maintenance/install.php --dbtype sqlite` writes
into the temp dir (half a second, once per class). The pool passes
MW_INSTALL_PATH and MW_CONFIG_FILE (MediaWiki reads both from the
environment), so nothing under /usr/share, /var/lib or /etc is written.

    test_example_mediawiki.py WEFT_BINARY
"""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_support import SLOW_PAGE, ExampleTestCase  # noqa: E402
from php_support import NOT_PHP  # noqa: E402

MEDIAWIKI = "/usr/share/mediawiki"
SITE_NAME = "Weft Test Wiki"
# What MediaWiki's settings file would print if it were ever run or sent.
SETTINGS_MARK = b"wgSecretKey"
FAVICON = b"\x00\x00\x01\x00 an icon"
PNG = b"\x89PNG\r\n\x1a\n an image"
WEEK = 7 * 24 * 3600


class MediaWiki(ExampleTestCase):
    EXAMPLE = "mediawiki.conf"
    REQUIRES = (os.path.join(MEDIAWIKI, "index.php"), "mediawiki")
    POOL_ENV = {"MW_INSTALL_PATH": "{dir}/www/w", "MW_CONFIG_FILE": "{dir}/LocalSettings.php"}

    @classmethod
    def environment(cls, dir):
        return {"MEDIAWIKI_ROOT": os.path.join(dir, "www")}

    @classmethod
    def setUpDir(cls, dir):
        w = os.path.join(dir, "www", "w")
        os.makedirs(w)
        for name in os.listdir(MEDIAWIKI):
            if name not in ("images", "LocalSettings.php", "cache"):
                os.symlink(os.path.join(MEDIAWIKI, name), os.path.join(w, name))
        # As in Debian's /var/lib/mediawiki: the settings linked into the
        # web root (here never served nor run).
        os.symlink(os.path.join(dir, "LocalSettings.php"), os.path.join(w, "LocalSettings.php"))
        cls.images = os.path.join(w, "images")
        for rel, data in {"a.png": PNG, "evil.php": NOT_PHP, "evil.phtml": NOT_PHP,
                          "deleted/old.png": PNG, "6/64/Favicon.ico": FAVICON}.items():
            path = os.path.join(cls.images, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        db, cache = os.path.join(dir, "db"), os.path.join(dir, "cache")
        os.makedirs(db)
        os.makedirs(cache)
        r = subprocess.run(
            ["php", os.path.join(w, "maintenance", "install.php"), "--dbtype", "sqlite",
             "--dbpath", db, "--dbname", "wiki", "--confpath", dir, "--scriptpath", "/w",
             "--server", f"http://127.0.0.1:{cls.port}", "--pass", "weft-test-password-1",
             "--skins", "Vector", "--lang", "en", SITE_NAME, "Admin"],
            env={**os.environ, "MW_INSTALL_PATH": w}, capture_output=True, timeout=300)
        if r.returncode != 0:
            raise AssertionError(f"install.php failed:\n{r.stdout.decode()}\n{r.stderr.decode()}")
        with open(os.path.join(dir, "LocalSettings.php"), "a") as f:
            f.write('$wgArticlePath = "/wiki/$1";\n'
                    "$wgUsePathInfo = true;\n"
                    f'$wgUploadDirectory = "{cls.images}";\n'
                    f'$wgCacheDirectory = "{cache}";\n')

    def page(self, path, *args):
        return self.curl(path, *SLOW_PAGE, *args)

    # --- what runs: the real wiki ---
    def test_a_short_url_runs_the_wiki(self):
        r = self.page("/wiki/Main_Page")
        self.assertStatus(r, 200, "/wiki/Main_Page")
        self.assertIn(f"<title>{SITE_NAME}</title>".encode(), r.body)  # the main page's
        self.assertIn(b'"wgPageName":"Main_Page"', r.body)
        self.assertIn(b"MediaWiki has been installed", r.body)
        # The wiki's own links are short URLs and /w assets.
        self.assertIn(b'href="/wiki/', r.body)
        self.assertIn(b'/w/load.php?', r.body)

    def test_a_missing_page_is_the_wiki_s_own_404(self):
        r = self.page("/wiki/No_such_page_here")
        self.assertStatus(r, 404, "/wiki/No_such_page_here")
        self.assertIn(b"There is currently no text in this page", r.body)

    def test_index_php_with_a_query(self):
        r = self.page("/w/index.php?title=Main_Page&action=raw")
        self.assertStatus(r, 200, "action=raw")
        self.assertIn(b"MediaWiki has been installed", r.body)
        self.assertNotIn(b"<html", r.body)

    def test_api_php(self):
        r = self.page("/w/api.php?action=query&meta=siteinfo&format=json")
        self.assertStatus(r, 200, "api.php")
        self.assertEqual(json.loads(r.body)["query"]["general"]["sitename"], SITE_NAME)

    def test_rest_php_takes_its_route_in_path_info(self):
        r = self.page("/w/rest.php/v1/page/Main_Page")
        self.assertStatus(r, 200, "rest.php")
        page = json.loads(r.body)
        self.assertEqual(page["title"], "Main Page")
        self.assertIn("MediaWiki has been installed", page["source"])

    def test_an_edit_through_the_api_shows_under_its_short_url(self):
        text = "Served by weft, edited through api.php."
        r = self.page("/w/api.php", "--data-urlencode", "action=edit", "--data-urlencode",
                      "title=Weft_example", "--data-urlencode", f"text={text}",
                      "--data-urlencode", "summary=test", "--data-urlencode", "format=json",
                      "--data-urlencode", "token=+\\")  # an anonymous edit's token
        self.assertStatus(r, 200, "api.php edit")
        self.assertEqual(json.loads(r.body)["edit"]["result"], "Success", r.body[:300])
        r = self.page("/wiki/Weft_example")
        self.assertStatus(r, 200, "/wiki/Weft_example")
        self.assertIn(text.encode(), r.body)

    def test_load_php_keeps_its_own_cache_control(self):
        r = self.page("/w/load.php?modules=startup&only=scripts&raw=1&skin=vector")
        self.assertStatus(r, 200, "load.php")
        self.assertIn("javascript", r.header("Content-Type"))
        self.assertIn(b"mw.loader", r.body)
        # Not the asset routes' week: ResourceLoader says its own (minutes
        # for the startup module, which names every other's version).
        self.assertIsNotNone(r.header("Cache-Control"))
        self.assertNotIn("max-age=604800", r.header("Cache-Control"))

    def test_opensearch_desc_php(self):
        r = self.page("/w/opensearch_desc.php")
        self.assertStatus(r, 200, "opensearch_desc.php")
        self.assertIn(b"OpenSearchDescription", r.body)

    # --- what is static, with a week's cache headers ---
    def assertWeek(self, path, content_type):
        r = self.curl(path)
        self.assertStatus(r, 200, path)
        with open(os.path.join(MEDIAWIKI, path[len("/w/"):]), "rb") as f:
            self.assertEqual(r.body, f.read(), path)
        self.assertTrue(r.header("Content-Type").startswith(content_type), r.headers)
        self.assertCached(r, "public, max-age=604800", WEEK)

    def test_resources_assets_are_static_for_a_week(self):
        self.assertWeek("/w/resources/assets/poweredby_mediawiki_88x31.png", "image/png")

    def test_skin_assets_are_static_for_a_week(self):
        self.assertWeek("/w/skins/Vector/resources/common/images/arrow-down-invert.svg",
                        "image/svg+xml")

    def test_extension_assets_are_static_for_a_week(self):
        # Debian links each extension from extensions-core: followed.
        self.assertWeek("/w/extensions/Cite/modules/ext.cite.a11y.js", "text/javascript")

    def test_an_uploaded_image_is_static(self):
        r = self.curl("/w/images/a.png")
        self.assertStatus(r, 200, "/w/images/a.png")
        self.assertEqual(r.body, PNG)
        self.assertEqual(r.header("Content-Type"), "image/png")

    def test_the_favicon_is_an_alias_into_images(self):
        r = self.curl("/favicon.ico")
        self.assertStatus(r, 200, "/favicon.ico")
        self.assertEqual(r.body, FAVICON)
        self.assertCached(r, "public, max-age=604800", WEEK)

    # --- what never runs, nor shows ---
    def test_a_script_in_images_never_runs_nor_shows(self):
        for path in ("/w/images/evil.php", "/w/images/evil.phtml", "/w/images/evil.php/x",
                     "/w/images/a.png/x.php"):
            with self.subTest(path=path):
                self.assertNeverRuns(path)

    def test_deleted_images_are_denied(self):
        r = self.curl("/w/images/deleted/old.png")
        self.assertStatus(r, 403, "/w/images/deleted/old.png")
        self.assertNotIn(PNG, r.body)

    def test_scripts_that_are_no_entry_point_are_404(self):
        for path in ("/w/includes/WebStart.php", "/w/mw-config/index.php", "/w/mw-config/",
                     "/w/maintenance/install.php", "/w/thumb_handler.php", "/w/autoload.php",
                     "/w/LocalSettings.php", "/w/resources/Resources.php",
                     "/w/extensions/Cite/src/Cite.php", "/w/skins/Vector/includes/Hooks.php"):
            with self.subTest(path=path):
                r = self.assertNeverRuns(path, statuses=(404,))
                self.assertNotIn(SETTINGS_MARK, r.body)

    def test_other_files_under_w_are_404(self):
        for path in ("/w/composer.json", "/w/skins/Vector/skin.json",
                     "/w/extensions/Cite/extension.json", "/w/extensions/Cite/README.md",
                     "/w/vendor/autoload.php", "/w/includes/", "/w/cache/"):
            with self.subTest(path=path):
                self.assertStatus(self.curl(path), 404, path)

    def test_the_settings_never_show(self):
        for path in ("/w/LocalSettings.php", "/wiki/../w/LocalSettings.php", "/w//LocalSettings.php",
                     "/w/LocalSettings.php/x", "/w/LocalSettings.php%00.png"):
            with self.subTest(path=path):
                r = self.curl(path, "--path-as-is")
                self.assertNotIn(SETTINGS_MARK, r.body)
                self.assertNotEqual(r.status, 200, path)

    # --- redirects and everything else ---
    def test_the_root_alone_redirects_to_the_main_page(self):
        r = self.curl("/")
        self.assertStatus(r, 301, "/")
        self.assertEqual(r.header("Location"), "/wiki/Main_Page")

    def test_any_other_path_is_404_not_a_redirect(self):
        for path in ("/robots.txt", "/index.php", "/anything", "/wikis", "/w.php", "/x/y"):
            with self.subTest(path=path):
                r = self.curl(path)
                self.assertStatus(r, 404, path)
                self.assertIsNone(r.header("Location"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
