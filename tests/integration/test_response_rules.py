#!/usr/bin/env python3
"""What a configuration adds to responses (issue 15): `headers { }` (set,
add, remove), cache_control and expires, and error_page (a route or a file),
on the files, response and redirect handlers, merged from the site and the
handler.

    test_response_rules.py WEFT_BINARY
"""
import email.utils
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import WEFT, ServerTestCase, Weft, get  # noqa: E402

CONF = """\
threads = 1
listener 127.0.0.1:{port}
site {
    host = rules.test
    root = {dir}/www
    headers {
        X-Site = site
        X-Frame-Options = DENY
        add Link = "</site.css>; rel=preload"
    }
    error_page = 404 /errors/404.html
    error_page = 405 file {dir}/pages/405.html
    files /static {
        expires = 7d
        cache_control = public
        headers {
            X-Frame-Options = SAMEORIGIN
            X-Content-Type-Options = nosniff
            add Link = "</a.css>; rel=preload"
        }
    }
    files /cached {
        cache_control = no-cache
    }
    files /errors {
        headers {
            X-Errors = yes
        }
    }
    files /plain {
        error_page = 404 /errors/missing.html
    }
    files /loop {
        error_page = 404 /loop/nothing.html
    }
    files /nopage {
        error_page = 404 /unrouted/x.html
    }
    response /hello {
        body = hello
        headers {
            remove X-Site
            add X-One = 1
            add X-One = 2
        }
    }
    redirect /old {
        to = /new
        expires = 60s
        headers {
            X-Redirect = yes
        }
    }
}
site {
    root = {dir}/www
    files / {
    }
}
"""

PAGE_404 = b"<h1>custom 404</h1>\n"
PAGE_405 = b"<h1>custom 405</h1>\n"


def http_date(value):
    return email.utils.parsedate_to_datetime(value).timestamp()


class ResponseRules(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        files = {
            "www/static/a.txt": b"static a\n",
            "www/cached/c.txt": b"cached\n",
            "www/errors/404.html": PAGE_404,
            "www/plain/p.txt": b"plain\n",
            "www/loop/x.txt": b"x\n",
            "pages/405.html": PAGE_405,
        }
        for rel, data in files.items():
            path = os.path.join(dir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)

    def get(self, path, extra=""):
        return self.roundtrip(get(path, "rules.test", extra))[1]

    # --- headers ---
    def test_handler_entries_override_the_sites_and_both_apply(self):
        r = self.get("/static/a.txt")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"static a\n")
        self.assertEqual(r.all("x-frame-options"), ["SAMEORIGIN"])
        self.assertEqual(r.header("x-content-type-options"), "nosniff")
        self.assertEqual(r.header("x-site"), "site")
        # `add` of the handler's replaces the site's entries for that name.
        self.assertEqual(r.all("link"), ["</a.css>; rel=preload"])

    def test_site_headers_on_a_handler_without_its_own(self):
        r = self.get("/cached/c.txt")
        self.assertEqual(r.header("x-site"), "site")
        self.assertEqual(r.all("x-frame-options"), ["DENY"])
        self.assertEqual(r.all("link"), ["</site.css>; rel=preload"])

    def test_response_handler_remove_and_add(self):
        r = self.get("/hello")
        self.assertEqual(r.body, b"hello")
        self.assertIsNone(r.header("x-site"))
        self.assertEqual(r.all("x-one"), ["1", "2"])
        self.assertEqual(r.header("x-frame-options"), "DENY")

    def test_redirect_gets_headers_and_expires(self):
        r = self.get("/old/x")
        self.assertEqual(r.status, 301, r)
        self.assertEqual(r.header("location"), "/new/x")
        self.assertEqual(r.header("x-redirect"), "yes")
        self.assertEqual(r.header("cache-control"), "max-age=60")
        self.assertAlmostEqual(http_date(r.header("expires")), time.time() + 60, delta=5)

    def test_headers_on_error_responses_too(self):
        # A 403 of the files handler (a dotfile): the rules apply, the
        # cache ones not (status >= 400).
        r = self.get("/static/.hidden")
        self.assertGreaterEqual(r.status, 400, r)
        self.assertEqual(r.header("x-content-type-options"), "nosniff")
        self.assertIsNone(r.header("cache-control"))
        self.assertIsNone(r.header("expires"))

    # --- cache_control and expires ---
    def test_expires_and_max_age(self):
        r = self.get("/static/a.txt")
        self.assertEqual(r.header("cache-control"), "public, max-age=604800")
        self.assertAlmostEqual(http_date(r.header("expires")), time.time() + 604800, delta=5)

    def test_cache_control_on_a_304_and_a_206(self):
        r = self.get("/cached/c.txt")
        self.assertEqual(r.header("cache-control"), "no-cache")
        self.assertIsNone(r.header("expires"))
        r304 = self.get("/cached/c.txt", f"If-None-Match: {r.header('etag')}\r\n")
        self.assertEqual(r304.status, 304, r304)
        self.assertEqual(r304.header("cache-control"), "no-cache")
        r206 = self.get("/cached/c.txt", "Range: bytes=0-1\r\n")
        self.assertEqual(r206.status, 206, r206)
        self.assertEqual(r206.header("cache-control"), "no-cache")

    def test_none_on_a_404(self):
        r = self.get("/static/missing.txt")
        self.assertEqual(r.status, 404, r)
        self.assertIsNone(r.header("cache-control"))
        self.assertIsNone(r.header("expires"))

    def test_the_file_cache_serves_the_same_head_twice(self):
        first = self.get("/static/a.txt")
        second = self.get("/static/a.txt")
        self.assertEqual(second.all("cache-control"), ["public, max-age=604800"])
        self.assertEqual(second.all("x-content-type-options"), ["nosniff"])
        self.assertEqual(first.header("etag"), second.header("etag"))

    # --- error_page ---
    def test_route_page_keeps_the_status(self):
        r = self.get("/static/missing.txt")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, PAGE_404)
        self.assertEqual(r.header("content-type"), "text/html; charset=utf-8")
        # The original handler's header rules, not the page's handler's.
        self.assertEqual(r.header("x-content-type-options"), "nosniff")
        self.assertIsNone(r.header("x-errors"))
        self.assertIsNone(r.header("last-modified"), "the page's validators leaked")
        self.assertIsNone(r.header("etag"))

    def test_a_missing_page_falls_back_to_the_built_in_one(self):
        r = self.get("/plain/missing.txt")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, b"404 Not Found\n")

    def test_a_page_that_404s_with_the_same_page_does_not_loop(self):
        r = self.get("/loop/missing.txt")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, b"404 Not Found\n")

    def test_a_page_no_handler_takes_falls_back(self):
        r = self.get("/nopage/missing.txt")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, b"404 Not Found\n")

    def test_an_unrouted_path_uses_the_sites_page(self):
        r = self.get("/nowhere")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, PAGE_404)
        # The site's header rules too, but no cache ones.
        self.assertEqual(r.header("x-site"), "site")
        self.assertIsNone(r.header("cache-control"))

    def test_a_head_gets_the_pages_head(self):
        c = self.connect()
        c.send("HEAD /static/missing.txt HTTP/1.1\r\nHost: rules.test\r\n\r\n")
        r = c.response(head=True)
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.header("content-length"), str(len(PAGE_404)))
        self.assertEqual(r.body, b"")

    def test_a_file_page(self):
        c, r = self.roundtrip("DELETE /static/a.txt HTTP/1.1\r\nHost: rules.test\r\n\r\n")
        self.assertEqual(r.status, 405, r)
        self.assertEqual(r.body, PAGE_405)
        self.assertEqual(r.header("content-type"), "text/html; charset=utf-8")
        self.assertIsNotNone(r.header("allow"), "the 405's Allow went")

    def test_a_post_gets_the_page_as_a_get(self):
        c, r = self.roundtrip("POST /static/missing.txt HTTP/1.1\r\nHost: rules.test\r\n"
                              "Content-Length: 5\r\n\r\nhello")
        self.assertIn(r.status, (404, 405), r)
        self.assertEqual(r.body, PAGE_404 if r.status == 404 else PAGE_405)
        # The connection goes on after the body.
        c.send(get("/static/a.txt", "rules.test"))
        self.assertEqual(c.response().body, b"static a\n")

    def test_conditional_and_range_fields_do_not_reach_the_page(self):
        page = self.get("/errors/404.html")
        r = self.get("/static/missing.txt",
                     f"If-None-Match: {page.header('etag')}\r\nRange: bytes=0-3\r\n")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, PAGE_404)

    def test_keep_alive_goes_on_after_a_page(self):
        c = self.connect()
        for _ in range(3):
            c.send(get("/static/missing.txt", "rules.test"))
            r = c.response()
            self.assertEqual(r.status, 404)
            self.assertEqual(r.body, PAGE_404)

    def test_a_site_without_rules_is_untouched(self):
        r = self.roundtrip(get("/static/a.txt", "other.test"))[1]
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.header("cache-control"))
        self.assertIsNone(r.header("x-site"))
        r = self.roundtrip(get("/static/missing", "other.test"))[1]
        self.assertEqual(r.body, b"404 Not Found\n")


class StartUp(unittest.TestCase):
    def test_an_unreadable_file_page_stops_the_start_but_not_weft_t(self):
        with tempfile.TemporaryDirectory() as dir:
            conf = os.path.join(dir, "weft.conf")
            with open(conf, "w") as f:
                f.write(f"listener 127.0.0.1:1\nsite {{\n    root = {dir}\n"
                        f"    error_page = 502 file {dir}/missing.html\n"
                        f"    files / {{\n    }}\n}}\n")
            check = subprocess.run([WEFT, "-t", "-c", conf], capture_output=True, timeout=10)
            self.assertEqual(check.returncode, 0, check.stderr)
            run = subprocess.run([WEFT, "-c", conf], capture_output=True, timeout=10)
            self.assertNotEqual(run.returncode, 0)
            self.assertIn(b"cannot read the error page", run.stderr)
            self.assertIn(b"missing.html", run.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
