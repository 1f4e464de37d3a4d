#!/usr/bin/env python3
"""weft's fastcgi handler in front of a real php-fpm8.2: the params PHP
sees (CGI variables, PATH_INFO, request headers as HTTP_*, a front
controller, `pass` without an upstream).

    test_php_params.py WEFT_BINARY
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import get  # noqa: E402
from php_support import SiteTestCase  # noqa: E402


class Params(SiteTestCase):
    """The params PHP gets, as nginx's fastcgi.conf sends them."""

    def test_a_plain_request(self):
        c = self.connect()
        c.send(get("/info.php?a=1&b=x%20y", host="example.test:8123"))
        r = c.response()
        self.assertEqual(r.status, 200, r)
        v = json.loads(r.body)
        s = v["server"]
        self.assertEqual(s["SCRIPT_FILENAME"], os.path.join(self.www, "info.php"))
        self.assertEqual(s["SCRIPT_NAME"], "/info.php")
        self.assertEqual(s.get("PATH_INFO", ""), "")
        self.assertNotIn("PATH_TRANSLATED", s)
        self.assertEqual(s["REQUEST_URI"], "/info.php?a=1&b=x%20y")
        self.assertEqual(s["DOCUMENT_URI"], "/info.php")
        self.assertEqual(s["QUERY_STRING"], "a=1&b=x%20y")
        self.assertEqual(s["REQUEST_METHOD"], "GET")
        self.assertEqual(s["CONTENT_TYPE"], "")
        self.assertEqual(s["CONTENT_LENGTH"], "")
        self.assertEqual(s["DOCUMENT_ROOT"], self.www)
        self.assertEqual(s["SERVER_PROTOCOL"], "HTTP/1.1")
        self.assertEqual(s["REQUEST_SCHEME"], "http")
        self.assertEqual(s["GATEWAY_INTERFACE"], "CGI/1.1")
        self.assertTrue(s["SERVER_SOFTWARE"].startswith("weft"), s["SERVER_SOFTWARE"])
        self.assertEqual(s["REMOTE_ADDR"], "127.0.0.1")
        self.assertEqual(s["REMOTE_PORT"], str(c.sock.getsockname()[1]))
        self.assertEqual(s["SERVER_ADDR"], "127.0.0.1")
        self.assertEqual(s["SERVER_PORT"], str(self.port))
        self.assertEqual(s["SERVER_NAME"], "example.test")
        self.assertEqual(s["HTTP_HOST"], "example.test:8123")
        self.assertEqual(s["REDIRECT_STATUS"], "200")
        self.assertNotIn("HTTPS", s)
        self.assertEqual(s["APP_ENV"], "testing")
        self.assertEqual(v["get"], {"a": "1", "b": "x y"})

    def test_http_1_0(self):
        c, r = self.roundtrip("GET /info.php HTTP/1.0\r\n\r\n", require_length=False)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(json.loads(r.body)["server"]["SERVER_PROTOCOL"], "HTTP/1.0")

    def test_path_info(self):
        s = self.php_vars("/info.php/extra/x?q=1")["server"]
        self.assertEqual(s["SCRIPT_NAME"], "/info.php")
        self.assertEqual(s["SCRIPT_FILENAME"], os.path.join(self.www, "info.php"))
        self.assertEqual(s["PATH_INFO"], "/extra/x")
        self.assertEqual(s["PATH_TRANSLATED"], self.www + "/extra/x")
        self.assertEqual(s["REQUEST_URI"], "/info.php/extra/x?q=1")
        self.assertEqual(s["DOCUMENT_URI"], "/info.php/extra/x")
        self.assertEqual(s["QUERY_STRING"], "q=1")

    def test_path_info_is_decoded_and_the_request_uri_is_not(self):
        s = self.php_vars("/info.php/a%20b/%C3%A9")["server"]
        self.assertEqual(s["PATH_INFO"], "/a b/\u00e9")
        self.assertEqual(s["REQUEST_URI"], "/info.php/a%20b/%C3%A9")

    def test_path_info_splits_at_the_first_existing_script(self):
        for path, script, path_info in [
                ("/info.php/sub/index.php", "/info.php", "/sub/index.php"),
                ("/sub/index.php/more", "/sub/index.php", "/more"),
                ("/dir.php/info.php", "/dir.php/info.php", ""),  # dir.php is a directory
                ("/dir.php/info.php/x", "/dir.php/info.php", "/x")]:
            with self.subTest(path=path):
                s = self.php_vars(path)["server"]
                self.assertEqual(s["SCRIPT_NAME"], script)
                self.assertEqual(s["SCRIPT_FILENAME"], self.www + script)
                self.assertEqual(s.get("PATH_INFO", ""), path_info)

    def test_a_post_has_its_content_type_and_length(self):
        v = self.php_vars("/info.php", "--data", "x=1&y=two+words")
        s = v["server"]
        self.assertEqual(s["REQUEST_METHOD"], "POST")
        self.assertEqual(s["CONTENT_TYPE"], "application/x-www-form-urlencoded")
        self.assertEqual(s["CONTENT_LENGTH"], "15")
        self.assertEqual(v["post"], {"x": "1", "y": "two words"})

    def test_request_headers_become_http_params(self):
        c, r = self.roundtrip(get("/info.php", extra=(
            "X-Custom-Thing: yes\r\n"
            "Accept-Language: fr\r\n"
            "Proxy: http://evil.example/\r\n"
            "X_Under: dropped\r\n"
            "X-Multi: 1\r\n"
            "X-Multi: 2\r\n"
            "Cookie: a=1\r\n"
            "Cookie: b=2\r\n")))
        self.assertEqual(r.status, 200, r)
        v = json.loads(r.body)
        s = v["server"]
        self.assertEqual(s["HTTP_X_CUSTOM_THING"], "yes")
        self.assertEqual(s["HTTP_ACCEPT_LANGUAGE"], "fr")
        self.assertNotIn("HTTP_PROXY", s)  # httpoxy
        self.assertNotIn("HTTP_X_UNDER", s)  # names with '_' are dropped, as nginx does
        self.assertEqual(s["HTTP_X_MULTI"], "1, 2")
        self.assertEqual(s["HTTP_COOKIE"], "a=1; b=2")
        self.assertEqual(v["cookie"], {"a": "1", "b": "2"})

    def test_huge_headers_fit_in_several_records(self):
        big = "v" * 8000
        extra = f"X-Big: {big}\r\n" + "".join(f"X-Extra-{i}: value number {i}\r\n"
                                              for i in range(80))
        c, r = self.roundtrip(get("/info.php", extra=extra))
        self.assertEqual(r.status, 200, r)
        s = json.loads(r.body)["server"]
        self.assertEqual(s["HTTP_X_BIG"], big)
        for i in range(80):
            self.assertEqual(s[f"HTTP_X_EXTRA_{i}"], f"value number {i}")

    def test_heads_up_to_max_head_reach_php_whole(self):
        # A field so long that its pair runs past the first 16 KiB of
        # records, at every size up to max_head (16384 bytes, the blank line
        # included): PHP-FPM parses each PARAMS record alone, so a pair cut
        # over two cost the request a 502. One byte more is weft's own 431.
        max_head = 16384
        for field in ("Cookie", "X"):
            c = self.connect()
            for size in list(range(max_head - 560, max_head + 1)) + [max_head + 1]:
                start = f"GET /info.php?n={size} HTTP/1.1\r\nHost: a\r\n{field}:"
                value = "k=" + "v" * (size - len(start) - len("\r\n\r\n") - 2)
                head = f"{start}{value}\r\n\r\n"
                self.assertEqual(len(head), size)
                c.send(head)
                r = c.response()
                if size > max_head:
                    self.assertEqual(r.status, 431, f"{field}, a head of {size} bytes")
                    continue
                self.assertEqual(r.status, 200, f"{field}, a head of {size} bytes: {r}")
                s = json.loads(r.body)["server"]
                self.assertEqual(s[f"HTTP_{field.upper()}"], value, f"{field}, {size} bytes")
                self.assertEqual(s["REQUEST_URI"], f"/info.php?n={size}")

    def test_a_front_controller_gets_paths_that_do_not_exist(self):
        v = self.php_vars("/some/route?x=1", host="front.test")
        s = v["server"]
        self.assertEqual(s["SCRIPT_NAME"], "/index.php")
        self.assertEqual(s["SCRIPT_FILENAME"], os.path.join(self.www, "index.php"))
        self.assertEqual(s["REQUEST_URI"], "/some/route?x=1")
        self.assertEqual(s["DOCUMENT_URI"], "/index.php")
        self.assertEqual(s["QUERY_STRING"], "x=1")
        self.assertEqual(v["get"], {"x": "1"})

    def test_a_front_controller_leaves_existing_files_alone(self):
        s = self.php_vars("/info.php", host="front.test")["server"]
        self.assertEqual(s["SCRIPT_NAME"], "/info.php")
        r = self.curl("/style.css", host="front.test")
        self.assertEqual((r.status, r.body), (200, b"body { color: red }\n"))

    def test_pass_sends_to_a_server_without_an_upstream(self):
        s = self.php_vars("/info.php/x", host="pass.test")["server"]
        self.assertEqual(s["SCRIPT_NAME"], "/info.php")
        self.assertEqual(s["PATH_INFO"], "/x")
        self.assertNotIn("APP_ENV", s)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
