#!/usr/bin/env python3
"""weft's fastcgi handler in front of a real php-fpm8.2: responses
(status, headers, cookies, redirects, streaming, big bodies, HEAD, heads
too big, errors, fastcgi_finish_request, stderr).

    test_php_responses.py WEFT_BINARY
"""
import hashlib
import os
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import get  # noqa: E402
from php_support import SiteTestCase  # noqa: E402


class Responses(SiteTestCase):
    def test_custom_headers_and_several_cookies(self):
        c, r = self.roundtrip(get("/headers.php"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("x-foo"), "bar")
        cookies = r.all("set-cookie")
        self.assertEqual(len(cookies), 3, r.headers)
        self.assertTrue(cookies[0].startswith("a=1"), cookies)
        self.assertTrue(cookies[1].startswith("b=2"), cookies)
        self.assertTrue(cookies[2].startswith("c=3"), cookies)
        self.assertIn("path=/x", cookies[2])
        self.assertIn("HttpOnly", cookies[2])
        self.assertEqual(r.header("server"), "weft")

    def test_framing_fields_stay_back_and_look_alikes_pass(self):
        c, r = self.roundtrip(get("/framing.php"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"framed\n")
        for name in ("keep-alive", "transfer-encoding", "x-accel-buffering", "x-accel-expires",
                     "x-accel-ab"):
            self.assertIsNone(r.header(name), f"{name} reached the client: {r.headers}")
        self.assertNotIn("close", [v.lower() for v in r.all("connection")], r.headers)
        self.assertEqual(r.header("connectiox"), "10")
        self.assertEqual(r.header("content-lengtx"), "14")
        self.assertEqual(r.header("transfer-encodinx"), "17")
        self.assertEqual(r.header("x-accelerated"), "yes")
        # The connection goes on.
        c.send(get("/echo.php?v=next"))
        self.assertEqual(c.response().body, b"next")

    def test_http_response_code(self):
        c, r = self.roundtrip(get("/teapot.php"))
        self.assertEqual(r.status, 418, r)
        self.assertEqual(r.body, b"short and stout\n")

    def test_a_status_header(self):
        c, r = self.roundtrip(get("/status.php"))
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body, b"gone\n")
        self.assertIsNone(r.header("status"), "the CGI Status header reached the client")

    def test_a_location_header_redirects(self):
        c, r = self.roundtrip(get("/redirect.php"))
        self.assertEqual(r.status, 302, r)
        self.assertEqual(r.header("location"), "/elsewhere")

    def test_a_5_mib_response(self):
        expected = b"".join(hashlib.md5(str(i).encode()).hexdigest().encode()
                            for i in range(5 * 1024 * 1024 // 32))
        c, r = self.roundtrip(get("/big.php"), timeout=20)
        self.assertEqual(r.status, 200)
        self.assertEqual(len(r.body), len(expected))
        self.assertEqual(hashlib.sha256(r.body).hexdigest(), hashlib.sha256(expected).hexdigest())
        # And the connection goes on.
        c.send(get("/echo.php?v=next"))
        self.assertEqual(c.response().body, b"next")

    def read_until(self, c, marker):
        while marker not in c.buf:
            c._fill()

    def test_flushed_output_streams_before_the_script_ends(self):
        id = uuid.uuid4().hex[:12]
        c = self.connect()
        c.send(get(f"/stream.php?id={id}"))
        self.read_until(c, b"first\n")
        self.assertFalse(self.marks.exists("done", id), "the script ended before 'first' came")
        self.marks.release(id)
        r = c.response()
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"first\nsecond\n")
        # The length was not known when the head went out.
        self.assertEqual(r.header("transfer-encoding"), "chunked")
        self.assertIsNone(r.header("content-length"))

    def test_http_1_0_without_length_ends_with_the_close(self):
        id = uuid.uuid4().hex[:12]
        self.marks.release(id)
        c, r = self.roundtrip(f"GET /stream.php?id={id} HTTP/1.0\r\n\r\n", require_length=False)
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.header("transfer-encoding"))
        self.assertEqual(r.body, b"first\nsecond\n")

    def test_head_has_no_body(self):
        c = self.connect()
        c.send("HEAD /info.php HTTP/1.1\r\nHost: a\r\n\r\n")
        r = c.response(head=True)
        self.assertEqual(r.status, 200, r)
        # A body after the head would be read as the next response.
        c.send(get("/echo.php?v=after-head"))
        r = c.response()
        self.assertEqual((r.status, r.body), (200, b"after-head"))

    def test_head_keeps_the_length_the_script_announced(self):
        c = self.connect()
        c.send("HEAD /length.php HTTP/1.1\r\nHost: a\r\n\r\n")
        r = c.response(head=True)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("content-length"), "5")
        c.send(get("/length.php"))
        r = c.response()
        self.assertEqual((r.status, r.body), (200, b"hello"))
        self.assertEqual(r.header("content-type"), "application/x-later")

    def test_a_header_block_too_big_is_502(self):
        c, r = self.roundtrip(get("/huge_header.php"))
        self.assertEqual(r.status, 502, r)
        self.assertNotIn(b"unreachable", r.body)
        c, r = self.roundtrip(get("/echo.php?v=fine"))
        self.assertEqual((r.status, r.body), (200, b"fine"))

    def test_fields_wider_than_a_response_head_are_502(self):
        c, r = self.roundtrip(get("/wide_header.php"))
        self.assertEqual(r.status, 502, r)
        self.assertNotIn(b"unreachable", r.body)
        self.assertIn("response fields pass 4096 bytes", self.weft.stderr())

    def test_a_fatal_error_is_500(self):
        c, r = self.roundtrip(get("/fatal.php"))
        self.assertEqual(r.status, 500, r)

    def test_fastcgi_finish_request_ends_the_response_at_once(self):
        id = uuid.uuid4().hex[:12]
        c = self.connect()
        c.send(get(f"/finish.php?id={id}"))
        r = c.response()
        self.assertEqual((r.status, r.body), (200, b"finished\n"))
        self.assertFalse(self.marks.exists("done", id), "the response waited for the script")
        self.marks.release(id)
        self.marks.wait("done", id)
        c.send(get("/echo.php?v=again"))
        self.assertEqual(c.response().body, b"again")

    def test_php_stderr_goes_to_the_error_log_with_the_request(self):
        marker = "marker-" + uuid.uuid4().hex
        r = self.curl(f"/stderr.php?m={marker}")
        self.assertEqual((r.status, r.body), (200, b"logged\n"))
        deadline = time.monotonic() + 5
        while True:
            lines = [line for line in self.weft.stderr().splitlines() if marker in line]
            if lines or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.assertEqual(len(lines), 1, self.weft.stderr()[-2000:])
        self.assertIn("GET /stderr.php", lines[0])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
