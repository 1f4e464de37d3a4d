#!/usr/bin/env python3
"""A real PHP application, unmodified, through weft: Debian's dokuwiki
package (/usr/share/dokuwiki) served by weft's fastcgi handler in front of
a php-fpm8.2 pool the test starts. Pages, the login form and a login, an
edit saved by a form POST, the static assets a browser loads, and the
paths DokuWiki's own .htaccess files deny.

Where the wiki writes: Debian's DokuWiki keeps its config in /etc/dokuwiki
and its pages in /var/lib/dokuwiki/data (www-data's). The test changes
neither. DokuWiki takes its config dir from the DOKU_CONF constant when
one is defined before it starts (Debian's inc/preload.php and DokuWiki's
farm setups rely on that); the test's pool defines it in an
auto_prepend_file, pointing at a config dir in the test's temp dir whose
local.php sets `savedir` to a temp data dir (and whose other files link to
/etc/dokuwiki's). PHP sessions go to the temp dir too. So the wiki runs as
installed, as whichever user runs the test, and everything it writes is
removed with the temp dir.

    test_php_app.py WEFT_BINARY
"""
import hashlib
import html
import html.parser
import http.cookiejar
import os
import re
import sys
import unittest
import urllib.error
import urllib.parse
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from php_support import PhpTestCase  # noqa: E402
from http_support import get  # noqa: E402

DOKUWIKI = "/usr/share/dokuwiki"
DEBIAN_CONF = "/etc/dokuwiki"
DEBIAN_DATA = "/var/lib/dokuwiki"
DATA_DIRS = ["pages", "attic", "media", "media_attic", "media_meta", "meta", "cache", "index",
             "locks", "tmp", "log"]

USER, PASSWORD = "weft", "weft-test-password"

CONF = """\
threads = 2
request_timeout = 5s
listener 127.0.0.1:{port}
upstream dokuwiki {
    server = unix:{dir}/dokuwiki/php.sock
    keepalive = 3
    max_conns = 3
    read_timeout = 30s
}
site {
    root = /usr/share/dokuwiki
    fastcgi / {
        upstream = dokuwiki
        index = doku.php
        static = on
        # What DokuWiki's .htaccess files deny (data and conf live
        # elsewhere in Debian's package; denied all the same).
        deny = /data /conf /bin /inc /vendor
        # Debian links lib/tpl and lib/plugins to /var/lib/dokuwiki:
        # followed, as nginx does by default.
        follow_symlinks = on
    }
}
"""


def snapshot(top):
    """Every readable path under `top` with its size and mtime."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            seen[path] = (st.st_size, st.st_mtime_ns)
    return seen


class Forms(html.parser.HTMLParser):
    """The forms of a page: id -> {name: value} of its inputs and
    textareas, as a browser would send them without a click."""

    def __init__(self, text):
        super().__init__()
        self.forms, self.current, self.textarea = {}, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.current = self.forms.setdefault(a.get("id") or f"form{len(self.forms)}", {})
            self.current["__action"] = a.get("action", "")
        elif self.current is None:
            return
        elif tag == "input" and a.get("name") and a.get("type") not in ("checkbox", "submit"):
            self.current[a["name"]] = a.get("value") or ""
        elif tag == "textarea" and a.get("name"):
            self.textarea = a["name"]
            self.current[self.textarea] = ""

    def handle_data(self, data):
        if self.textarea:
            self.current[self.textarea] += data

    def handle_endtag(self, tag):
        if tag == "textarea":
            self.textarea = None
        elif tag == "form":
            self.current = None


class Page:
    def __init__(self, status, headers, body, url):
        self.status, self.headers, self.body, self.url = status, headers, body, url
        self.text = body.decode("utf-8", "replace")

    def header(self, name):
        return self.headers.get(name)

    def __repr__(self):
        return f"<{self.status} {self.url} {self.body[:200]!r}>"


class Browser:
    """Cookies kept, redirects followed, every status returned."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def open(self, path, fields=None):
        data = urllib.parse.urlencode(fields).encode() if fields is not None else None
        url = path if path.startswith("http") else self.base + path
        try:
            with self.opener.open(url, data, timeout=30) as r:
                return Page(r.status, r.headers, r.read(), r.url)
        except urllib.error.HTTPError as e:
            with e:
                return Page(e.code, e.headers, e.read(), url)


class DokuWiki(PhpTestCase):
    CONF = CONF
    POOLS = {"dokuwiki": 3}
    POOL_ADMIN = {"auto_prepend_file": "{dir}/prepend.php",
                  "session.save_path": "{dir}/sessions"}

    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(os.path.join(DOKUWIKI, "doku.php")):
            raise unittest.SkipTest("dokuwiki is not installed (Debian package dokuwiki: "
                                    ".ci/install-deps)")
        cls.before = {top: snapshot(top) for top in (DEBIAN_CONF, DEBIAN_DATA)}
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        for top, before in cls.before.items():
            if snapshot(top) != before:
                raise AssertionError(f"the test changed {top}")

    @classmethod
    def setUpDir(cls, dir):
        conf, cls.data = os.path.join(dir, "conf"), os.path.join(dir, "data")
        os.makedirs(conf)
        os.makedirs(os.path.join(dir, "sessions"))
        for sub in DATA_DIRS:
            os.makedirs(os.path.join(cls.data, sub))
        own = {"local.php", "acl.auth.php", "users.auth.php", "local.protected.php"}
        for name in os.listdir(DEBIAN_CONF):
            if name not in own and not name.startswith("."):
                os.symlink(os.path.join(DEBIAN_CONF, name), os.path.join(conf, name))
        with open(os.path.join(conf, "local.php"), "w") as f:
            f.write("<?php\n"
                    "$conf['title'] = 'weft test wiki';\n"
                    f"$conf['savedir'] = '{cls.data}';\n"
                    "$conf['useacl'] = 1;\n"
                    "$conf['superuser'] = '@admin';\n"
                    "$conf['license'] = 'cc-by-sa';\n")
        # Anyone may read, edit, create and upload; one user to log in.
        with open(os.path.join(conf, "acl.auth.php"), "w") as f:
            f.write("# acl.auth.php\n*\t@ALL\t8\n")
        md5 = hashlib.md5(PASSWORD.encode()).hexdigest()  # one of the hashes DokuWiki reads
        with open(os.path.join(conf, "users.auth.php"), "w") as f:
            f.write(f"# users.auth.php\n{USER}:{md5}:Weft Tester:weft@example.invalid:user\n")
        with open(os.path.join(dir, "prepend.php"), "w") as f:
            f.write(f"<?php\ndefine('DOKU_CONF', '{conf}/');\n")

    def setUp(self):
        self.browser = Browser(self.port)

    def assertHtmlPage(self, page):
        self.assertEqual(page.status, 200, page)
        self.assertTrue((page.header("content-type") or "").startswith("text/html"), page.headers)
        self.assertIn("<!DOCTYPE html>", page.text)
        self.assertIn("</html>", page.text)

    def start_page_links(self):
        page = self.browser.open("/")
        self.assertHtmlPage(page)
        links = {html.unescape(u) for u in re.findall(r'(?:src|href)="(/lib/[^"]+)"', page.text)}
        self.assertTrue(links, "the start page links no asset")
        return links

    def assertAsset(self, path):
        page = self.browser.open(path)
        self.assertEqual(page.status, 200, f"{path}: {page}")
        self.assertGreater(len(page.body), 0, path)
        return page

    # --- pages ---
    def test_the_start_page(self):
        page = self.browser.open("/")
        self.assertHtmlPage(page)
        self.assertIn("<title>start [weft test wiki]</title>", page.text)
        # DokuWiki builds its links from SCRIPT_NAME: the base is /.
        self.assertIn('href="/doku.php?id=start&amp;do=edit"', page.text)
        self.assertIn("DokuWiki", [c.name for c in self.browser.jar])

    def test_doku_php_and_a_missing_page(self):
        page = self.browser.open("/doku.php?id=wiki:no_such_page_here")
        self.assertHtmlPage(page)
        self.assertIn("This topic does not exist yet", page.text)

    # --- assets ---
    def test_the_assets_the_start_page_loads(self):
        links = {u for u in self.start_page_links() if not u.startswith("/lib/tpl/")}
        for path in sorted(links):
            with self.subTest(path=path):
                self.assertAsset(path)
        css = self.assertAsset(next(u for u in links if u.startswith("/lib/exe/css.php")))
        self.assertTrue(css.header("content-type").startswith("text/css"), css.headers)
        self.assertIn(b".dokuwiki", css.body)
        js = self.assertAsset(next(u for u in links if u.startswith("/lib/exe/js.php")))
        self.assertIn("javascript", js.header("content-type"))

    def test_static_files_under_lib_are_sent_as_they_are(self):
        for path, media in [("/lib/images/license/button/cc-by-sa.png", "image/png"),
                            ("/lib/images/blank.gif", "image/gif"),
                            ("/lib/scripts/helpers.js", "javascript")]:
            with self.subTest(path=path):
                page = self.assertAsset(path)
                with open(DOKUWIKI + path, "rb") as f:
                    self.assertEqual(page.body, f.read())
                self.assertIn(media, page.header("content-type"))

    def test_the_template_images_behind_debians_symlink(self):
        # Debian links /usr/share/dokuwiki/lib/tpl to /var/lib/dokuwiki/lib/tpl:
        # the logo and icons a browser shows come from there.
        links = {u for u in self.start_page_links() if u.startswith("/lib/tpl/")}
        self.assertIn("/lib/tpl/dokuwiki/images/logo.png", links)
        for path in sorted(links):
            with self.subTest(path=path):
                page = self.assertAsset(path)
                with open(DOKUWIKI + path, "rb") as f:
                    self.assertEqual(page.body, f.read())

    # --- forms ---
    def test_the_login_form_and_a_login(self):
        page = self.browser.open("/doku.php?id=start&do=login")
        self.assertHtmlPage(page)
        form = Forms(page.text).forms.get("dw__login")
        self.assertIsNotNone(form, "no login form")
        self.assertIn("u", form)
        self.assertIn("p", form)
        action = html.unescape(form.pop("__action"))
        page = self.browser.open(action, {**form, "u": USER, "p": "wrong"})
        self.assertEqual(page.status, 403, page)  # DokuWiki's answer to a failed login
        self.assertIn("username or password was wrong", page.text)
        page = self.browser.open(action, {**form, "u": USER, "p": PASSWORD})
        self.assertHtmlPage(page)
        self.assertIn("Weft Tester", page.text)
        self.assertIn("do=logout", page.text)

    def test_an_edit_saved_by_a_form_post(self):
        id = "weft_" + uuid.uuid4().hex[:12]
        text = f"====== Saved through weft ======\n\nHello from {id}, with ümlauts & <tags>.\n"
        page = self.browser.open(f"/doku.php?id={id}&do=edit")
        self.assertHtmlPage(page)
        form = Forms(page.text).forms.get("dw__editform")
        self.assertIsNotNone(form, "no edit form")
        self.assertIn("wikitext", form)
        action = html.unescape(form.pop("__action"))
        page = self.browser.open(action, {**form, "wikitext": text, "summary": "weft test",
                                          "do[save]": "1"})
        # DokuWiki answers the save with a redirect to the page.
        self.assertHtmlPage(page)
        self.assertTrue(page.url.endswith(f"/doku.php?id={id}"), page.url)
        self.assertIn(f"Hello from {id}, with ümlauts &amp; &lt;tags&gt;.", page.text)
        self.assertIn("Saved through weft</h1>", page.text)
        # DokuWiki trims the text's last newline when it saves it.
        raw = self.browser.open(f"/doku.php?do=export_raw&id={id}")
        self.assertEqual(raw.status, 200)
        self.assertEqual(raw.body.decode().rstrip("\n"), text.rstrip("\n"))
        # Where it was written: the temp savedir, not Debian's.
        with open(os.path.join(self.data, "pages", id + ".txt")) as f:
            self.assertEqual(f.read().rstrip("\n"), text.rstrip("\n"))

    # --- denied ---
    def test_the_denied_paths(self):
        for path in ["/data/pages/wiki/welcome.txt", "/data/", "/conf/local.php",
                     "/conf/users.auth.php", "/bin/dwpage.php", "/inc/init.php",
                     "/inc/.htaccess", "/vendor/autoload.php", "/.htaccess"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 403, r)
                self.assertNotIn(b"<?php", r.body)
                self.assertNotIn(b"Weft Tester", r.body)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
