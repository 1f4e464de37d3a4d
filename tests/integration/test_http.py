#!/usr/bin/env python3
"""weft's HTTP/1.1 server, run for real on a loopback port: the protocol,
its strictness, request smuggling, timeouts, load, the stop, the router and
the response, redirect and access-log features. Raw sockets where curl would
tidy the request up.

    test_http.py WEFT_BINARY
"""
import hashlib
import os
import re
import resource
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import (Client, Closed, ServerTestCase, Weft, accepts, answers,  # noqa: E402
                          assertValidDate, curl, get, port_is_free)

HELLO = b"Hello, World!"

CONF = """\
threads = 2
request_timeout = 2s
keep_alive_timeout = 3s
max_request_body = 1M
access_log = {dir}/access.log
listener 127.0.0.1:{port}
site {
    host = a.test
    root = {dir}
    response / {
        body = site A
    }
}
site {
    root = {dir}
    response /hello {
        body = Hello, World!
    }
    response /hello/world {
        content_type = text/html
        body = deeper
    }
    response /secret {
        body = SECRET
    }
    redirect /old {
        to = /new
    }
}
"""


class HttpTestCase(ServerTestCase):
    CONF = CONF

    def assertHello(self, r):
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, HELLO)

    def assertRejected(self, data, status):
        """`data` is answered `status` and the connection closes after it."""
        c, r = self.roundtrip(data)
        self.assertEqual(r.status, status, r)
        self.assertCommonHeaders(r)
        self.assertClosed(c)

    def access_log_lines(self, must_contain, timeout=3.0):
        """The access log once a line holding `must_contain` is in it (it
        may be written a little after the response)."""
        path = os.path.join(self.dir, "access.log")
        deadline = time.monotonic() + timeout
        while True:
            lines = []
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = f.read().splitlines()
            if any(must_contain in line for line in lines) or time.monotonic() > deadline:
                return lines
            time.sleep(0.05)


class Protocol(HttpTestCase):
    def test_keep_alive_serves_several_requests_on_one_connection(self):
        c = self.connect()
        for _ in range(5):
            c.send(get("/hello"))
            r = c.response()
            self.assertHello(r)
            self.assertNotEqual((r.header("connection") or "").lower(), "close")
        self.assertStillOpen(c)

    def test_http_1_0_closes_by_default(self):
        c, r = self.roundtrip("GET /hello HTTP/1.0\r\n\r\n")
        self.assertHello(r)
        self.assertClosed(c)

    def test_http_1_0_keeps_alive_when_asked(self):
        c = self.connect()
        for _ in range(2):
            c.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            r = c.response()
            self.assertHello(r)
            self.assertEqual((r.header("connection") or "").lower(), "keep-alive")
        self.assertStillOpen(c)

    def test_connection_close_closes_after_the_response(self):
        c, r = self.roundtrip(get("/hello", extra="Connection: close\r\n"))
        self.assertHello(r)
        self.assertEqual((r.header("connection") or "").lower(), "close")
        self.assertClosed(c)

    def test_closing_over_bytes_still_in_the_socket_sends_no_reset(self):
        # The server's first read fills its 20 KiB buffer exactly: two whole
        # requests, the second with Connection: close. A third stays in the
        # socket: closing over unread bytes would answer with a reset, which
        # can destroy the responses before the client reads them.
        first = get("/hello", extra="X-Pad: " + "a" * 9000 + "\r\n")
        second = "GET /hello HTTP/1.1\r\nHost: a\r\nConnection: close\r\nX-Pad: \r\n\r\n"
        pad = 20 * 1024 - len(first) - len(second)
        second = second.replace("X-Pad: ", "X-Pad: " + "b" * pad)
        c = self.connect()
        c.send(first + second + get("/secret"))
        self.assertHello(c.response())
        r = c.response()
        self.assertHello(r)
        self.assertEqual((r.header("connection") or "").lower(), "close")
        self.assertEqual(c.buf, b"")
        try:
            rest = c.sock.recv(65536)
        except ConnectionResetError:
            self.fail("the connection was reset, not closed")
        self.assertEqual(rest, b"", "a response to the request after Connection: close")

    def test_sixteen_pipelined_requests_are_answered_in_order(self):
        c = self.connect()
        c.send("".join(get(f"/old/{i}") for i in range(16)))
        for i in range(16):
            r = c.response()
            self.assertEqual(r.status, 301, r)
            self.assertEqual(r.header("location"), f"/new/{i}")
        self.assertStillOpen(c)

    def test_absolute_form_target(self):
        c, r = self.roundtrip("GET http://a/hello HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertHello(r)

    def test_options_asterisk_is_204_with_allow(self):
        c, r = self.roundtrip("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual(r.status, 204, r)
        allow = [m.strip() for m in (r.header("allow") or "").split(",")]
        self.assertIn("GET", allow)
        self.assertIn("HEAD", allow)
        c.send(get("/hello"))
        self.assertHello(c.response())

    def test_head_has_the_get_headers_and_no_body(self):
        c = self.connect()
        # GET right behind: a body after the HEAD response would break its framing.
        c.send("HEAD /hello HTTP/1.1\r\nHost: a\r\n\r\n" + get("/hello"))
        head = c.response(head=True)
        got = c.response()
        self.assertEqual(head.status, 200)
        self.assertHello(got)
        self.assertEqual(head.header("content-length"), str(len(HELLO)))
        without_date = lambda r: sorted((n.lower(), v) for n, v in r.headers if n.lower() != "date")
        self.assertEqual(without_date(head), without_date(got))
        self.assertStillOpen(c)

    def test_server_and_date_on_every_response(self):
        for data in [get("/hello"), get("/old"), get("/nowhere"), "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
                     "GET /hello HTTP/1.1\r\n\r\n", "FOO /hello HTTP/1.1\r\nHost: a\r\n\r\n"]:
            with self.subTest(request=data):
                c, r = self.roundtrip(data)
                self.assertCommonHeaders(r)

    def test_a_body_has_content_length_or_chunked(self):
        # The client's reader fails on a response with neither; this one is exact.
        c, r = self.roundtrip(get("/hello"))
        self.assertEqual(r.header("content-length"), "13")
        self.assertEqual(r.header("content-type"), "text/plain")
        self.assertIsNone(r.header("transfer-encoding"))

    def test_curl_gets_hello(self):
        r = self.curl("/hello")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, HELLO)
        self.assertEqual(r.header("server"), "weft")


class Strictness(HttpTestCase):
    def test_content_length_with_transfer_encoding_is_400(self):
        self.assertRejected("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)

    def test_two_content_lengths_are_400(self):
        for a, b in [("5", "5"), ("5", "6")]:
            with self.subTest(lengths=(a, b)):
                self.assertRejected(f"POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: {a}\r\n"
                                    f"Content-Length: {b}\r\n\r\nhello!", 400)

    def test_an_invalid_content_length_is_400(self):
        for value in ["-1", "1,1", "abc", "+5", "0x5", ""]:
            with self.subTest(value=value):
                self.assertRejected(f"POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: {value}"
                                    "\r\n\r\nhello", 400)

    def test_transfer_encoding_gzip_is_501(self):
        self.assertRejected("POST /hello HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501)

    def test_bare_lf_line_endings_are_400(self):
        self.assertRejected("GET /hello HTTP/1.1\nHost: a\n\n", 400)
        self.assertRejected("GET /hello HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", 400)

    def test_nul_in_a_header_is_400(self):
        self.assertRejected("GET /hello HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n", 400)

    def test_a_control_character_in_a_header_is_400(self):
        for ch in ["\x01", "\x1b", "\x7f"]:
            with self.subTest(char=ch):
                self.assertRejected(f"GET /hello HTTP/1.1\r\nHost: a\r\nX: a{ch}b\r\n\r\n", 400)

    def test_obs_fold_is_400(self):
        self.assertRejected("GET /hello HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400)

    def test_space_before_a_colon_is_400(self):
        self.assertRejected("GET /hello HTTP/1.1\r\nHost: a\r\nX-Foo : a\r\n\r\n", 400)

    def test_missing_host_in_http_1_1_is_400(self):
        self.assertRejected("GET /hello HTTP/1.1\r\n\r\n", 400)

    def test_repeated_host_is_400(self):
        self.assertRejected("GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400)

    def test_a_request_line_over_8_kib_is_414(self):
        self.assertRejected(get("/hello?" + "a" * 9000), 414)

    def test_a_head_over_16_kib_is_431(self):
        fields = "".join(f"X-{i}: {'v' * 1000}\r\n" for i in range(20))
        self.assertRejected(get("/hello", extra=fields), 431)

    def test_a_body_over_max_request_body_is_413(self):
        self.assertRejected("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n", 413)

    def test_any_token_method_reaches_the_handler_and_the_connection_stays(self):
        # WebDAV's methods are an application's (a fastcgi handler's); a
        # fixed response answers them as it answers GET.
        c = self.connect()
        for method in ("PROPFIND", "MKCOL", "M-SEARCH", "FOO"):
            c.send(f"{method} /hello HTTP/1.1\r\nHost: a\r\n\r\n")
            self.assertHello(c.response())
        c.close()

    def test_http_2_0_on_the_request_line_is_505(self):
        self.assertRejected("GET /hello HTTP/2.0\r\nHost: a\r\n\r\n", 505)

    def expect_continue(self):
        """A POST with `Expect: 100-continue` that waits for the go-ahead;
        the client and the first response that is not 100 Continue (the body
        is sent when the server asks for it)."""
        c = self.connect(timeout=1.5)  # well under request_timeout: a hang fails here
        c.send("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n"
               "Expect: 100-continue\r\n\r\n")
        r = c.response()
        if r.status == 100:
            c.send("0123456789")
            r = c.final_response()
        return c, r

    def test_expect_100_continue_is_answered_without_hanging(self):
        c, r = self.expect_continue()
        self.assertHello(r)

    def test_an_answer_before_an_expected_body_says_whether_the_connection_closes(self):
        # RFC 9110 10.1.1: a final answer before the content should say whether
        # the server closes or goes on reading it. The client may send the body
        # anyway; then it is a body, never the next request.
        c, r = self.expect_continue()
        self.assertHello(r)
        c.send("0123456789" + get("/hello"))
        if (r.header("connection") or "").lower() == "close":
            self.assertClosed(c)
        else:
            try:
                self.assertHello(c.response())
            except Closed:
                self.fail("closed after the body came, without saying Connection: close")
            self.assertStillOpen(c)

    def test_a_chunked_body_with_a_trailer_is_consumed_exactly(self):
        body = ("5\r\nhello\r\n6;name=value\r\n world\r\n10\r\n0123456789abcdef\r\n"
                "0\r\nX-Trailer: t\r\n\r\n")
        c = self.connect()
        c.send("POST /hello HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + body +
               get("/hello"))
        self.assertHello(c.response())
        self.assertHello(c.response())
        self.assertStillOpen(c)

    def test_a_chunked_body_arriving_after_the_response_is_consumed(self):
        c = self.connect()
        c.send("POST /hello HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")
        time.sleep(0.2)
        c.send("lo\r\n3\r\nabc\r\n0\r\n\r\n" + get("/hello"))
        self.assertHello(c.response())
        self.assertHello(c.response())
        self.assertStillOpen(c)

    def test_a_content_length_body_arriving_late_is_consumed(self):
        c = self.connect()
        c.send("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 30\r\n\r\n" + "x" * 10)
        time.sleep(0.2)
        c.send(get("/secret")[:20] + get("/hello"))
        self.assertHello(c.response())
        self.assertHello(c.response())
        self.assertStillOpen(c)


class Desync(HttpTestCase):
    def test_a_header_line_cut_at_a_bare_cr(self):
        self.assertRejected("GET /hello HTTP/1.1\r\nHost: a\r\nX: y\rContent-Length: 20\r\n\r\n", 400)

    def test_phantom_request_after_a_body(self):
        phantom = "GET /secret HTTP/1.1\r\nHost: a\r\n\r\n"
        c = self.connect()
        c.send(f"POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: {len(phantom)}\r\n\r\n" +
               phantom + get("/hello?after-phantom", extra="Connection: close\r\n"))
        self.assertHello(c.response())
        self.assertHello(c.response())
        self.assertClosed(c)  # and nothing more: no third response
        lines = self.access_log_lines("after-phantom")
        self.assertTrue(any("after-phantom" in line for line in lines), lines)
        self.assertFalse([line for line in lines if "/secret" in line])

    def test_a_malformed_chunked_body_ends_the_connection(self):
        # Once the framing is broken nothing after it can be trusted: at most
        # the answer to the POST, then the close; never one for the GET.
        for chunks in ["zz\r\nhello\r\n0\r\n\r\n", "5\nhello\r\n0\r\n\r\n",
                       "5\r\nhelloXX0\r\n\r\n", "fffffffffffffffffff\r\nhello\r\n0\r\n\r\n"]:
            with self.subTest(body=chunks):
                c = self.connect()
                c.send("POST /hello HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" +
                       chunks + get("/secret"))
                r = c.response()
                self.assertIn(r.status, (200, 400), r)
                self.assertClosed(c)


class Timeouts(HttpTestCase):
    def test_slowloris_does_not_block_others_and_is_closed_after_request_timeout(self):
        slow = self.connect(timeout=12)
        head = get("/hello", extra="X-Slow: " + "a" * 100 + "\r\n")
        result = {}

        def trickle():
            start = time.monotonic()
            for ch in head:
                if time.monotonic() - start > 12:
                    return
                try:
                    slow.sock.sendall(ch.encode())
                    rest = slow.rest_until_close(0.5)
                except OSError:  # reset: closed with unread bytes
                    rest = slow.buf
                if rest is not None:
                    result["closed_after"] = time.monotonic() - start
                    result["rest"] = rest
                    return

        t = threading.Thread(target=trickle)
        t.start()
        time.sleep(0.6)
        for _ in range(20):
            c = Client(self.port, timeout=2)
            c.send(get("/hello", extra="Connection: close\r\n"))
            self.assertHello(c.response())
            c.close()
        # Served while the slow head was still arriving: no duration is
        # asserted (shared machines are noisy), only the order.
        self.assertTrue(t.is_alive(), "the slow client was closed too early")
        t.join(15)
        self.assertIn("closed_after", result, "the slow client was never closed")
        # request_timeout = 2s: never before it; the upper bound only catches
        # a timeout that is not applied at all.
        self.assertGreater(result["closed_after"], 1.5)
        self.assertLess(result["closed_after"], 10.0)
        rest = result["rest"]
        self.assertTrue(rest == b"" or rest.startswith(b"HTTP/1.1 408 "), rest)

    def test_an_idle_keep_alive_connection_is_closed_after_keep_alive_timeout(self):
        c = self.connect()
        c.send(get("/hello"))
        self.assertHello(c.response())
        start = time.monotonic()
        self.assertStillOpen(c, wait=2.0)  # keep_alive_timeout = 3s
        self.assertClosed(c, timeout=8.0)
        self.assertGreater(time.monotonic() - start, 2.5)


    def test_empty_lines_between_requests_start_no_request(self):
        # RFC 9112 §2.2: a client may send CRLFs after a request. Alone they
        # are no request head in progress: no 408 when nothing follows, in
        # the segment of the request or one of their own.
        for trailing_in_same_segment in (True, False):
            with self.subTest(same_segment=trailing_in_same_segment):
                c = self.connect()
                c.send(get("/hello") + ("\r\n" if trailing_in_same_segment else ""))
                self.assertHello(c.response())
                c.send("\r\n\r\n")
                time.sleep(0.2)
                c.send("\r\n" + get("/hello"))
                self.assertHello(c.response())
                c.send("\r\n")
                # Closed as idle: keep_alive_timeout = 3s, request_timeout = 2s.
                self.assertEqual(c.rest_until_close(8.0), b"")

class IdleTimeouts(ServerTestCase):
    """A connection that served requests idles under keep_alive_timeout, also
    when its coroutine ended and a new one found no request to serve."""

    CONF = """\
threads = 1
request_timeout = 1s
keep_alive_timeout = 4s
listener 127.0.0.1:{port}
site {
    root = {dir}
    response /hello {
        body = Hello, World!
    }
    files /files {
    }
}
"""
    BIG = 16 << 20

    @classmethod
    def setUpDir(cls, dir):
        os.mkdir(os.path.join(dir, "files"))
        with open(os.path.join(dir, "files", "big.bin"), "wb") as f:
            f.write(b"x" * cls.BIG)

    def assertIdlesAsKeptAlive(self, c):
        # request_timeout would close it after 1 s, keep_alive_timeout after 4.
        self.assertStillOpen(c, wait=2.0)
        self.assertClosed(c, timeout=8.0)

    def test_a_connection_that_sent_nothing_idles_under_request_timeout(self):
        kept = self.connect()
        kept.send(get("/hello"))
        self.assertEqual(kept.response().body, HELLO)
        fresh = self.connect()
        self.assertClosed(fresh, timeout=8.0)
        # In that order: the kept-alive one has 3 s more.
        self.assertStillOpen(kept, wait=0.1)

    def test_after_empty_lines_that_came_alone(self):
        c = self.connect()
        c.send(get("/hello"))
        self.assertEqual(c.response().body, HELLO)
        time.sleep(0.2)  # parked: the CRLF starts a coroutine of its own
        c.send("\r\n")
        self.assertIdlesAsKeptAlive(c)

    def test_after_a_wake_up_for_bytes_already_read(self):
        # The next request arrives while the server waits to write a large
        # response, and is read without waiting for it: the readiness it
        # raised is still recorded when the connection parks, and starts a
        # coroutine that finds nothing to read.
        c = self.connect()
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.send(get("/hello"))
        self.assertEqual(c.response().body, HELLO)
        c.send(get("/files/big.bin", extra="Content-Length: 2048\r\n"))
        self.assertTrue(c._line().startswith(b"HTTP/1.1 200 "))
        time.sleep(0.3)  # the server waits to write
        c.send("b" * 2048 + get("/hello"))
        while c._line() != b"":
            pass
        self.assertEqual(c._exactly(self.BIG), b"x" * self.BIG)
        self.assertEqual(c.response().body, HELLO)
        self.assertIdlesAsKeptAlive(c)


class Router(HttpTestCase):
    def test_sites_are_chosen_by_host(self):
        for host, body in [("a.test", b"site A"), ("A.TEST", b"site A"), ("a.test:8080", b"site A"),
                           ("b.test", HELLO), ("127.0.0.1", HELLO)]:
            with self.subTest(host=host):
                c, r = self.roundtrip(get("/hello", host=host))
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.body, body)

    def test_an_absolute_form_target_chooses_the_site(self):
        c, r = self.roundtrip("GET http://a.test/hello HTTP/1.1\r\nHost: other\r\n\r\n")
        self.assertEqual(r.body, b"site A")

    def test_the_longest_prefix_wins(self):
        for path, body in [("/hello/world", b"deeper"), ("/hello/world/x", b"deeper"),
                           ("/hello/x", HELLO), ("/hello/worldwide", HELLO)]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.body, body)

    def test_a_prefix_matches_whole_segments(self):
        for path in ["/hello", "/hello/", "/hello/x", "/hello?q=1"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertHello(r)
        for path in ["/helloworld", "/hell", "/"]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 404, r)


class Redirect(HttpTestCase):
    def test_redirect_keeps_the_rest_of_the_path_and_the_query(self):
        for path, location in [("/old", "/new"), ("/old/x?y", "/new/x?y"), ("/old/a/b", "/new/a/b")]:
            with self.subTest(path=path):
                c, r = self.roundtrip(get(path))
                self.assertEqual(r.status, 301, r)
                self.assertEqual(r.header("location"), location)

    def test_curl_sees_the_redirect(self):
        r = self.curl("/old/x?y")
        self.assertEqual(r.status, 301)
        self.assertEqual(r.header("location"), "/new/x?y")


class AccessLog(HttpTestCase):
    COMBINED = re.compile(r'(\S+) - (\S+) \[(\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\] '
                          r'"((?:[^"\\]|\\.)*)" (\d{3}) (\d+|-) "((?:[^"\\]|\\.)*)" '
                          r'"((?:[^"\\]|\\.)*)"')

    @staticmethod
    def unescape(field):
        """A quoted field's value: \\" and \\\\ or nginx's \\xHH escapes."""
        return re.sub(r'\\x([0-9A-Fa-f]{2})|\\(.)',
                      lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), field)

    def test_a_combined_line_per_request_with_quotes_escaped(self):
        self.curl("/hello?log-1", "-A", 'agent "quoted" \\ x', "-e", "http://ref/")
        self.curl("/nowhere?log-2")
        lines = self.access_log_lines("log-2")
        mine = [line for line in lines if "log-1" in line or "log-2" in line]
        self.assertEqual(len(mine), 2, lines)
        first = self.COMBINED.fullmatch(mine[0])
        self.assertIsNotNone(first, mine[0])
        self.assertEqual(first.group(1), "127.0.0.1")
        self.assertEqual(first.group(4), "GET /hello?log-1 HTTP/1.1")
        self.assertEqual(first.group(5), "200")
        self.assertEqual(first.group(6), "13")
        self.assertEqual(first.group(7), "http://ref/")
        self.assertEqual(self.unescape(first.group(8)), 'agent "quoted" \\ x')
        second = self.COMBINED.fullmatch(mine[1])
        self.assertIsNotNone(second, mine[1])
        self.assertEqual(second.group(5), "404")

    def test_a_request_that_did_not_parse_is_logged_with_its_first_line(self):
        for data, status in [
                ("GET /hello?unparsed-1 HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n", 400),
                ("\r\nGET /hello?unparsed-2\x01\"x HTTP/1.1\r\nHost: a\r\n\r\n", 400),
                ("GET /hello?unparsed-3 HTTP/1.1\nHost: a\n\n", 400),
                (get("/hello?unparsed-4" + "a" * 9000), 414)]:
            with self.subTest(data=data[:40]):
                c, r = self.roundtrip(data)
                self.assertEqual(r.status, status, r)
        lines = self.access_log_lines("unparsed-4")
        requests = {}
        for line in lines:
            m = self.COMBINED.fullmatch(line)
            self.assertIsNotNone(m, line)
            if "unparsed-" in m.group(4):
                requests[m.group(4).split("unparsed-")[1][0]] = (m.group(4), m.group(5))
        self.assertEqual(requests.get("1"), ("GET /hello?unparsed-1 HTTP/1.1", "400"), lines)
        # Escaped as every logged field is: a control byte or a quote cannot
        # forge a field.
        self.assertEqual(requests.get("2"),
                         ('GET /hello?unparsed-2\\x01\\x22x HTTP/1.1', "400"), lines)
        self.assertEqual(requests.get("3"), ("GET /hello?unparsed-3 HTTP/1.1", "400"), lines)
        # An over-long line is cut, not logged whole.
        line, status = requests.get("4", ("", ""))
        self.assertEqual(status, "414", lines)
        self.assertTrue(line.startswith("GET /hello?unparsed-4aaaa"), line)
        self.assertLess(len(line), 1024)


class Load(HttpTestCase):
    CLIENTS = 1000

    @classmethod
    def setUpClass(cls):
        # The server inherits this limit: 1000 clients and their server ends.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 4 * cls.CLIENTS
        if soft < want:
            if hard != resource.RLIM_INFINITY and hard < want:
                raise unittest.SkipTest(f"RLIMIT_NOFILE hard limit {hard} < {want}")
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        super().setUpClass()

    def test_a_thousand_concurrent_keep_alive_clients(self):
        clients = []
        try:
            for _ in range(self.CLIENTS):
                clients.append(Client(self.port, timeout=10))
            for _ in range(3):
                for c in clients:
                    c.send(get("/hello"))
                statuses = []
                for c in clients:
                    r = c.response()
                    statuses.append((r.status, r.body))
                self.assertEqual(statuses, [(200, HELLO)] * self.CLIENTS)
        finally:
            for c in clients:
                c.close()


class Lifecycle(unittest.TestCase):
    """A weft per test: these stop it."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = os.path.realpath(tmp.name)
        os.mkdir(os.path.join(self.dir, "www"))

    def start(self, keep_alive="3s", files=True):
        conf = (f"threads = 2\nkeep_alive_timeout = {keep_alive}\nlistener 127.0.0.1:{{port}}\n"
                "site {\n    root = {dir}/www\n    response /hello {\n        body = Hello, World!\n"
                "    }\n" + ("    files / {\n        listing = off\n    }\n" if files else "") + "}\n")
        w = Weft(self.dir, conf)
        self.addCleanup(w.kill)
        return w

    def test_sigterm_lets_a_download_in_flight_finish_and_refuses_new_connections(self):
        size = 50 << 20
        block = os.urandom(1 << 20)
        with open(os.path.join(self.dir, "www", "big.bin"), "wb") as f:
            for _ in range(50):
                f.write(block)
        want = hashlib.sha256(block * 50).hexdigest()
        w = self.start()
        c = Client(w.port, timeout=5)
        self.addCleanup(c.close)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.send(get("/big.bin"))
        self.assertTrue(c._line().startswith(b"HTTP/1.1 200 "))
        while c._line() != b"":
            pass
        digest = hashlib.sha256()
        got = 0
        first = c.sock.recv(65536)  # the transfer has begun
        digest.update(c.buf + first)
        got += len(c.buf) + len(first)
        c.buf = b""
        w.terminate()
        # Each loop closes its own listener (SO_REUSEPORT), a moment apart:
        # one refusal proves little while another loop may still answer, so
        # ask for several refusals in a row.
        deadline = time.monotonic() + 3
        refusals = 0
        while refusals < 5 and time.monotonic() < deadline:
            refusals = 0 if answers(w.port) else refusals + 1
            time.sleep(0.05)
        self.assertEqual(refusals, 5, "new connections still answered after SIGTERM")
        self.assertIsNone(w.process.poll(), "weft exited with a download in flight")
        while got < size:
            chunk = c.sock.recv(1 << 20)
            if not chunk:
                break
            digest.update(chunk)
            got += len(chunk)
        self.assertEqual(got, size)
        self.assertEqual(digest.hexdigest(), want)
        self.assertEqual(w.wait(5), 0, w.stderr())

    def test_idle_keep_alive_connections_do_not_hold_the_stop_up(self):
        w = self.start(keep_alive="60s", files=False)
        c = Client(w.port)
        self.addCleanup(c.close)
        c.send(get("/hello"))
        self.assertEqual(c.response().body, HELLO)
        w.terminate()
        # Sooner than the 10 s grace a request in flight would get: parked
        # connections are closed at once.
        self.assertEqual(w.wait(8), 0, w.stderr())
        self.assertEqual(c.rest_until_close(1), b"")

    def test_no_arguments_serves_the_current_directory_on_8080(self):
        if not port_is_free(8080) or accepts(8080):
            self.skipTest("port 8080 is busy")
        with open(os.path.join(self.dir, "www", "index.txt"), "w") as f:
            f.write("served from cwd\n")
        w = Weft(self.dir, args=[], port=8080, cwd=os.path.join(self.dir, "www"))
        self.addCleanup(w.kill)
        r = curl(8080, "/index.txt")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, b"served from cwd\n")
        self.assertEqual(w.stop(), 0, w.stderr())
        with open(w.out_path) as f:
            self.assertIn("http://127.0.0.1:8080/", f.read())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
