#!/usr/bin/env python3
"""weft's fastcgi handler in front of a real php-fpm8.2: the params PHP
sees (CGI variables, PATH_INFO, request headers as HTTP_*, a front
controller, `pass` without an upstream).

    test_php_params.py WEFT_BINARY
"""
import json
import os
import re
import shutil
import signal
import sys
import time
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


class KeptConnectionParams(SiteTestCase):
    """A kept connection's request whose inputs match the one before gets
    the pairs written for that one (params.hpp): never when anything that
    goes into them differs, however little."""

    def server(self, c, request):
        c.send(request)
        r = c.response()
        self.assertEqual(r.status, 200, r)
        return json.loads(r.body)["server"]

    def test_a_field_value_of_the_same_length_is_its_own(self):
        c = self.connect()
        for token in ["aaaa", "bbbb", "aaaa", "aaab", "aaab", "Aaab"]:
            s = self.server(c, get("/info.php", extra=f"X-Token: {token}\r\n"))
            self.assertEqual(s["HTTP_X_TOKEN"], token)
        # A field name of another case is the same field; one more or one
        # fewer field shows as it is.
        s = self.server(c, get("/info.php", extra="x-token: aaab\r\n"))
        self.assertEqual(s["HTTP_X_TOKEN"], "aaab")
        s = self.server(c, get("/info.php", extra="X-Token: aaab\r\nX-Token: b\r\n"))
        self.assertEqual(s["HTTP_X_TOKEN"], "aaab, b")
        s = self.server(c, get("/info.php"))
        self.assertNotIn("HTTP_X_TOKEN", s)

    def test_another_path_or_query_of_the_same_length_is_its_own(self):
        c = self.connect()
        for path, script, path_info, query in [
                ("/info.php?a=1", "/info.php", "", "a=1"),
                ("/info.php?a=2", "/info.php", "", "a=2"),
                ("/info.php/x?a", "/info.php", "/x", "a"),
                ("/info.php/y?a", "/info.php", "/y", "a"),
                ("/echo.php?a=1", "/echo.php", "", "a=1"),
                ("/info.php?a=1", "/info.php", "", "a=1")]:
            c.send(get(path))
            r = c.response()
            self.assertEqual(r.status, 200, r)
            if script == "/echo.php":
                continue
            s = json.loads(r.body)["server"]
            self.assertEqual((s["REQUEST_URI"], s["SCRIPT_NAME"], s.get("PATH_INFO", ""),
                              s["QUERY_STRING"]), (path, script, path_info, query))

    def test_the_version_and_the_method_are_their_own(self):
        c = self.connect()
        s = self.server(c, "GET /info.php HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual((s["REQUEST_METHOD"], s["SERVER_PROTOCOL"]), ("GET", "HTTP/1.1"))
        s = self.server(c, "GET /info.php HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n")
        self.assertEqual(s["SERVER_PROTOCOL"], "HTTP/1.0")
        c.send("PUT /info.php HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n")
        s = json.loads(c.response().body)["server"]
        self.assertEqual(s["REQUEST_METHOD"], "PUT")

    def test_pipelined_requests_each_get_their_own(self):
        c = self.connect()
        c.send("".join(get(f"/info.php?n={i % 10}", extra=f"X-N: {i % 10}\r\n")
                       for i in range(12)))
        for i in range(12):
            r = c.response()
            self.assertEqual(r.status, 200, r)
            s = json.loads(r.body)["server"]
            self.assertEqual((s["HTTP_X_N"], s["QUERY_STRING"]), (str(i % 10), f"n={i % 10}"))

    def test_connections_sharing_a_slot_each_get_their_own_ends(self):
        # More connections than a thread has slots: some share one, with
        # heads alike but for a field of the same length.
        clients = [self.connect() for _ in range(150)]
        for round in range(2):
            for i, c in enumerate(clients):
                c.send(get("/info.php", extra=f"X-Conn: {i:03}\r\n"))
            for i, c in enumerate(clients):
                r = c.response()
                self.assertEqual(r.status, 200, r)
                s = json.loads(r.body)["server"]
                self.assertEqual(s["HTTP_X_CONN"], f"{i:03}")
                self.assertEqual(s["REMOTE_PORT"], str(c.sock.getsockname()[1]))
        # The very same head on every connection: only the ends differ.
        for round in range(2):
            for c in clients:
                c.send(get("/info.php"))
            for c in clients:
                s = json.loads(c.response().body)["server"]
                self.assertEqual(s["REMOTE_PORT"], str(c.sock.getsockname()[1]))

    def test_a_body_of_another_length_behind_the_same_head(self):
        c = self.connect()
        for body in ["a=1", "a=2", "b=22"]:
            c.send("POST /info.php HTTP/1.1\r\nHost: a\r\n"
                   "Content-Type: application/x-www-form-urlencoded\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n{body}")
            v = json.loads(c.response().body)
            self.assertEqual(v["server"]["CONTENT_LENGTH"], str(len(body)))
            self.assertEqual(v["post"], dict([body.split("=")]))
        # Chunked: the heads are the same byte for byte, the lengths are not.
        for body in ["x=1", "x=22", "x=333", "x=1"]:
            c.send("POST /info.php HTTP/1.1\r\nHost: a\r\n"
                   "Content-Type: application/x-www-form-urlencoded\r\n"
                   f"Transfer-Encoding: chunked\r\n\r\n{len(body):x}\r\n{body}\r\n0\r\n\r\n")
            v = json.loads(c.response().body)
            self.assertEqual(v["server"]["CONTENT_LENGTH"], str(len(body)))
            self.assertEqual(v["post"], dict([body.split("=")]))

    def test_a_script_deleted_between_requests(self):
        # front.test runs /index.php for what names no script: the same
        # head, another script once page.php is gone, and again once it is
        # back.
        page = os.path.join(self.www, "page.php")
        shutil.copy(os.path.join(self.www, "info.php"), page)
        self.addCleanup(lambda: os.path.exists(page) and os.unlink(page))
        c = self.connect()
        request = get("/page.php/x", host="front.test")
        for _ in range(2):
            s = self.server(c, request)
            self.assertEqual((s["SCRIPT_NAME"], s["PATH_INFO"]), ("/page.php", "/x"))
        os.unlink(page)
        for _ in range(2):
            s = self.server(c, request)
            self.assertEqual(s["SCRIPT_NAME"], "/index.php")
            self.assertEqual(s.get("PATH_INFO", ""), "")
            self.assertEqual(s["DOCUMENT_URI"], "/index.php")
        shutil.copy(os.path.join(self.www, "info.php"), page)
        s = self.server(c, request)
        self.assertEqual((s["SCRIPT_NAME"], s["PATH_INFO"]), ("/page.php", "/x"))


class KeptConnectionParamsAcrossReloads(SiteTestCase):
    """A reload between two requests of a kept connection: the second gets
    the new configuration's params, though its head is the same."""

    def test_a_reload_changes_the_params_of_the_next_request(self):
        c = self.connect()
        request = get("/info.php", extra="X-Same: 1\r\n")
        for _ in range(2):
            self.assertEqual(self.server(c, request)["APP_ENV"], "testing")
        for value in ["TESTING", "testing"]:  # the same length
            with open(self.weft.conf_path) as f:
                conf = f.read()
            with open(self.weft.conf_path, "w") as f:
                f.write(re.sub(r"APP_ENV = \w+", f"APP_ENV = {value}", conf))
            self.weft.process.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 10
            while self.php_vars("/info.php")["server"]["APP_ENV"] != value:
                self.assertLess(time.monotonic(), deadline, "the reload did not take")
                time.sleep(0.05)
            for _ in range(2):
                self.assertEqual(self.server(c, request)["APP_ENV"], value)

    def server(self, c, request):
        c.send(request)
        r = c.response()
        self.assertEqual(r.status, 200, r)
        return json.loads(r.body)["server"]


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
