#!/usr/bin/env python3
"""Response rules (issue 15) on PHP's responses, against a real php-fpm8.2:
headers { } set/add/remove on what PHP sends, PHP's own Cache-Control over
cache_control, and error_page: pages routed to PHP, a file page when the
backend is down, PHP's own error responses left alone.

    test_php_response_rules.py WEFT_BINARY
"""
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import get  # noqa: E402
from php_support import UPSTREAM_PHP, PhpTestCase, install_fixtures  # noqa: E402

CONF = ("""\
threads = 1
listener 127.0.0.1:{port}
""" + UPSTREAM_PHP + """\
site {
    root = {dir}/www
    error_page = 404 /errors/page.php
    headers {
        X-Site = site
    }
    fastcgi / {
        upstream = php
        cache_control = public
        headers {
            remove X-Powered-By
            X-Foo = replaced
            add X-Added = yes
        }
    }
    files /static {
    }
    fastcgi /missingpage {
        upstream = php
        error_page = 404 /errors/absent.php
    }
    fastcgi /wide {
        upstream = php
        headers {
            X-Big = BIG
        }
    }
    fastcgi /down {
        pass = unix:{dir}/nobody.sock
        error_page = 502 file {dir}/pages/50x.html
    }
    fastcgi /downpage {
        pass = unix:{dir}/nobody.sock
        error_page = 502 /down/x.php
    }
}
""").replace("BIG", "b" * 1500)

PAGE_50X = b"<h1>we are down</h1>\n"

PAGE_PHP = b"""<?php
header('X-Page: php');
header('X-Powered-By: PHP-test');
echo 'page ', $_SERVER['REQUEST_METHOD'], ' uri=', $_SERVER['REQUEST_URI'],
    ' query=', $_SERVER['QUERY_STRING'], ' body=', file_get_contents('php://input'),
    ' range=', $_SERVER['HTTP_RANGE'] ?? '-', ' inm=', $_SERVER['HTTP_IF_NONE_MATCH'] ?? '-', "\\n";
"""

POWERED = b"""<?php
header('X-Powered-By: PHP-test');
header('X-Foo: from-php');
echo "powered\\n";
"""

OWN_CACHE = b"""<?php
header('Cache-Control: private, no-store');
echo "mine\\n";
"""


WIDE = b"""<?php
header('X-Wide: ' . str_repeat('w', (int)$_GET['n']));
echo "wide\\n";
"""


class PhpResponseRules(PhpTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        www = os.path.join(dir, "www")
        install_fixtures(www, {
            "status.php": "status.php",
            "powered.php": POWERED,
            "cache.php": OWN_CACHE,
            "errors/page.php": PAGE_PHP,
            "static/a.txt": b"a\n",
            "missingpage/x.txt": b"x\n",
            # Scripts that exist, behind a backend nobody listens for.
            "down/x.php": POWERED,
            "wide/wide.php": WIDE,
            "downpage/x.php": POWERED,
        })
        os.makedirs(os.path.join(dir, "pages"))
        with open(os.path.join(dir, "pages/50x.html"), "wb") as f:
            f.write(PAGE_50X)

    def test_remove_set_and_add_on_phps_response(self):
        c, r = self.roundtrip(get("/powered.php"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"powered\n")
        self.assertIsNone(r.header("x-powered-by"))
        self.assertEqual(r.all("x-foo"), ["replaced"])
        self.assertEqual(r.header("x-added"), "yes")
        self.assertEqual(r.header("x-site"), "site")
        self.assertEqual(r.header("cache-control"), "public")

    def test_phps_own_cache_control_wins(self):
        c, r = self.roundtrip(get("/cache.php"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.all("cache-control"), ["private, no-store"])

    def test_phps_own_error_response_is_left_alone(self):
        # status.php answers 404 itself: no error page, no cache rules,
        # but the header rules.
        c, r = self.roundtrip(get("/status.php"))
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, b"gone\n")
        self.assertIsNone(r.header("cache-control"))
        self.assertEqual(r.header("x-added"), "yes")

    def test_a_missing_script_gets_the_php_page_as_get(self):
        c, r = self.roundtrip("POST /nope.php?a=1 HTTP/1.1\r\nHost: x\r\n"
                              "Content-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")
        self.assertEqual(r.status, 404, r)
        # REQUEST_URI is the client's, as nginx's $request_uri; the query
        # is the page's (none).
        self.assertEqual(r.body, b"page GET uri=/nope.php?a=1 query= body= range=- inm=-\n")
        # The original handler's rules: X-Powered-By the page sent goes.
        self.assertIsNone(r.header("x-powered-by"))
        self.assertEqual(r.header("x-page"), "php")
        self.assertIsNone(r.header("cache-control"))
        c.send(get("/powered.php"))
        self.assertEqual(c.response().body, b"powered\n")

    def test_a_static_404_gets_the_php_page_without_range_or_conditions(self):
        c, r = self.roundtrip(get("/static/missing.txt", "x",
                                  "Range: bytes=0-3\r\nIf-None-Match: \"x\"\r\n"))
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, b"page GET uri=/static/missing.txt query= body= range=- inm=-\n")
        # files /static has no header rules of its own: the site's.
        self.assertEqual(r.header("x-site"), "site")
        self.assertEqual(r.header("x-powered-by"), "PHP-test")

    def test_a_head_gets_the_php_pages_head(self):
        c = self.connect()
        c.send("HEAD /static/missing.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        r = c.response(head=True)
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, b"")
        self.assertEqual(r.header("x-page"), "php")

    def test_a_missing_php_page_falls_back(self):
        c, r = self.roundtrip(get("/missingpage/nothing.php"))
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, b"404 Not Found\n")

    def test_fields_that_leave_no_room_for_the_rules_are_a_500(self):
        c, r = self.roundtrip(get("/wide/wide.php?n=2000"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(len(r.header("x-big")), 1500)
        # 3 KiB of PHP's fields and the rules' 1.5 KiB pass the head's 4 KiB.
        c, r = self.roundtrip(get("/wide/wide.php?n=3000"))
        self.assertEqual(r.status, 500, r)
        self.assertIsNone(r.header("x-big"))
        self.assertIsNone(r.header("x-wide"))
        self.assertIn("configured headers passed", self.weft.stderr())

    def test_a_file_page_when_the_backend_is_down(self):
        c, r = self.roundtrip(get("/down/x.php"))
        self.assertEqual(r.status, 502, r)
        self.assertEqual(r.body, PAGE_50X)
        self.assertEqual(r.header("content-type"), "text/html; charset=utf-8")

    def test_a_route_page_whose_backend_is_down_falls_back(self):
        c, r = self.roundtrip(get("/downpage/x.php?from=here"))
        self.assertEqual(r.status, 502, r)
        self.assertEqual(r.body, b"502 Bad Gateway\n")
        # The page's failure is logged with its request as PHP saw it: GET
        # and the client's target (the method and the target are no longer
        # one run of the connection's buffer).
        page_failed = re.compile(r'weft: fastcgi /down: .*\("GET /downpage/x\.php\?from=here"\)')
        deadline = time.monotonic() + 5
        while not page_failed.search(self.weft.stderr()):
            self.assertLess(time.monotonic(), deadline, self.weft.stderr())
            time.sleep(0.05)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
