#!/usr/bin/env python3
"""weft's fastcgi handler in front of a real php-fpm8.2 that each test class
starts with its own pool file: the params PHP sees, which paths reach PHP
and which never do, forms and uploads, responses (status, headers, cookies,
streaming, big bodies, errors), and the backend in trouble (stopped,
restarted, slow, busy, two of them).

    test_php.py WEFT_BINARY
"""
import hashlib
import json
import os
import socket
import sys
import tempfile
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Client, Weft, free_port, get  # noqa: E402
from php_support import (PhpFpm, PhpTestCase, fastcgi_get, install_fixtures,  # noqa: E402
                         require_php_fpm)

SECRET = b"TOP SECRET"
# What a file that must never run as PHP would print if it ran; its source
# does not hold the word, so serving the file as it is shows no EXECUTED.
EXECUTED = b"EXECUTED"
NOT_PHP = b'<?php echo strrev("DETUCEXE");\n'

SCRIPTS = ["info.php", "echo.php", "pool.php", "upload.php", "body.php", "headers.php",
           "teapot.php", "status.php", "redirect.php", "big.php", "fatal.php", "stderr.php",
           "stream.php", "finish.php", "hold.php", "huge_header.php", "length.php",
           "wide_header.php"]


def body_summary(data):
    """What body.php answers for a body of `data`: length as sent, bytes read, md5."""
    return f"{len(data)} {len(data)} {hashlib.md5(data).hexdigest()}"


def install_site(www):
    layout = {name: name for name in SCRIPTS}
    layout.update({
        "index.php": "info.php",
        "sub/index.php": "info.php",
        "dir.php/info.php": "info.php",  # a directory named like a script
        "uploads/a.jpg": NOT_PHP,
        "uploads/notes.txt": NOT_PHP,
        "style.css": b"body { color: red }\n",
        "data/secret.txt": SECRET,
        "data/x.php": NOT_PHP,
        "conf/local.php": NOT_PHP,
        ".env": SECRET,
        ".git/config": SECRET,
        "hidden/.secret.php": NOT_PHP,
    })
    install_fixtures(www, layout)


UPSTREAM_PHP = """\
upstream php {
    server = unix:{dir}/php/php.sock
    keepalive = 4
    max_conns = 4
    connect_timeout = 2s
    read_timeout = 10s
    queue_timeout = 10s
}
"""

# The default site: no fallback. front.test: the same with a front
# controller. pass.test: `pass` instead of a named upstream.
SITE_CONF = """\
threads = 2
request_timeout = 5s
keep_alive_timeout = 5s
max_request_body = 16M
listener 127.0.0.1:{port}
""" + UPSTREAM_PHP + """\
site {
    host = front.test
    root = {dir}/www
    fastcgi / {
        upstream = php
        fallback = /index.php
        deny = /data /conf
        params {
            APP_ENV = testing
        }
    }
}
site {
    host = pass.test
    root = {dir}/www
    fastcgi / {
        pass = unix:{dir}/php/php.sock
    }
}
site {
    root = {dir}/www
    fastcgi / {
        upstream = php
        extensions = .php
        index = index.php
        static = on
        deny = /data /conf
        params {
            APP_ENV = testing
        }
    }
}
"""


class SiteTestCase(PhpTestCase):
    CONF = SITE_CONF
    POOLS = {"php": 4}

    @classmethod
    def setUpDir(cls, dir):
        cls.www = os.path.join(dir, "www")
        install_site(cls.www)

    def php_vars(self, path, *curl_args, host=None):
        """What info.php (or a copy of it) received for `path`."""
        r = self.curl(path, *curl_args, host=host)
        self.assertEqual(r.status, 200, r.body[:300])
        return json.loads(r.body)

    def assertNeverPhp(self, r, path):
        self.assertNotIn(EXECUTED, r.body, f"{path} ran as PHP")


class Harness(unittest.TestCase):
    """The test's own tools, without weft: the pool answers, and the
    connection count counts what the other tests take it for."""

    @classmethod
    def setUpClass(cls):
        require_php_fpm()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.realpath(cls.tmp.name)
        install_fixtures(os.path.join(cls.dir, "www"), {"pool.php": "pool.php"})
        cls.script = os.path.join(cls.dir, "www", "pool.php")
        cls.pool = PhpFpm(cls.dir, "harness", children=2)

    @classmethod
    def tearDownClass(cls):
        cls.pool.stop()
        cls.tmp.cleanup()

    def test_the_pool_answers_fastcgi(self):
        out, err = fastcgi_get(self.pool.socket, self.script)
        self.assertTrue(out.endswith(b"\r\n\r\nharness"), out)

    def test_each_open_connection_counts_once_accepted_or_waiting(self):
        socks = []
        try:
            # Four connections to a pool of two children: two accepted, two
            # waiting in the backlog; all four are open.
            for _ in range(4):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                socks.append(s)
                s.connect(self.pool.socket)
            self.pool.wait_connections(lambda n: n == 2, what="2 accepted", states=("03",))
            self.pool.wait_connections(lambda n: n == 4, what="4")
            self.assertEqual(self.pool.connections(("02",)), 2)
        finally:
            for s in socks:
                s.close()
        self.pool.wait_connections(lambda n: n == 0, what="0 once closed")

    def test_a_kept_connection_counts_until_it_is_closed(self):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.pool.socket)
            for _ in range(2):
                out, _ = fastcgi_get(self.pool.socket, self.script, sock=s)
                self.assertTrue(out.endswith(b"harness"), out)
                self.assertEqual(self.pool.connections(), 1)
        self.pool.wait_connections(lambda n: n == 0, what="0 once closed")

    def test_a_restarted_pool_answers_again(self):
        self.pool.restart()
        out, _ = fastcgi_get(self.pool.socket, self.script)
        self.assertTrue(out.endswith(b"harness"), out)


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


class Forms(SiteTestCase):
    def test_a_get_query(self):
        v = self.php_vars("/info.php?name=J%C3%B6rg&list[]=1&list[]=2")
        self.assertEqual(v["get"], {"name": "J\u00f6rg", "list": ["1", "2"]})

    def test_an_urlencoded_post(self):
        v = self.php_vars("/info.php?from=query", "--data", "a=1&b=two+words&c=%26")
        self.assertEqual(v["post"], {"a": "1", "b": "two words", "c": "&"})
        self.assertEqual(v["get"], {"from": "query"})

    def test_a_2_mib_multipart_upload(self):
        data = os.urandom(2 << 20)
        path = os.path.join(self.dir, "upload.bin")
        with open(path, "wb") as f:
            f.write(data)
        r = self.curl("/upload.php", "-F", f"file=@{path}")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.body.decode(), f"0 {len(data)} {hashlib.md5(data).hexdigest()}")

    def chunked_post(self, size):
        data = os.urandom(size)
        path = os.path.join(self.dir, f"chunked-{size}.bin")
        with open(path, "wb") as f:
            f.write(data)
        r = self.curl("/body.php", "-H", "Transfer-Encoding: chunked",
                      "-H", "Content-Type: application/octet-stream", "--data-binary", f"@{path}")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.body.decode(), body_summary(data))

    def test_a_chunked_body_arrives_with_its_exact_length(self):
        self.chunked_post(300_000)

    def test_a_chunked_body_over_1_mib(self):
        self.chunked_post(1_500_000)

    def test_a_chunked_body_in_many_small_chunks(self):
        data = os.urandom(50_000)
        chunks = b""
        for i in range(0, len(data), 777):
            piece = data[i:i + 777]
            chunks += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        c = self.connect()
        c.send(b"POST /body.php HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
               b"Content-Type: application/octet-stream\r\n\r\n" + chunks + b"0\r\n\r\n")
        r = c.response()
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body.decode(), body_summary(data))

    def test_a_body_with_content_length(self):
        data = os.urandom(100_000)
        c = self.connect()
        c.send(f"POST /body.php HTTP/1.1\r\nHost: a\r\nContent-Length: {len(data)}\r\n"
               "Content-Type: application/octet-stream\r\n\r\n".encode() + data)
        r = c.response()
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body.decode(), body_summary(data))


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


class Load(SiteTestCase):
    def test_50_concurrent_requests_on_4_children(self):
        results = {}
        peak = [0]
        done = threading.Event()
        pool = self.pools["php"]

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], pool.connections())
                time.sleep(0.005)

        def one(i):
            try:
                c = Client(self.port, timeout=30)
                try:
                    c.send(get(f"/echo.php?v=req-{i}&ms=20"))
                    r = c.response()
                    results[i] = (r.status, r.body)
                finally:
                    c.close()
            except Exception as e:  # reported below, with the others
                results[i] = (None, repr(e).encode())

        sampler = threading.Thread(target=sample)
        sampler.start()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        done.set()
        sampler.join()
        bad = {i: r for i, r in results.items() if r != (200, f"req-{i}".encode())}
        self.assertEqual(len(results), 50)
        self.assertEqual(bad, {})
        self.assertLessEqual(peak[0], 4, "more backend connections than max_conns")
        pool.wait_connections(lambda n: n <= 4, what="at most keepalive = 4")


class BackendDown(PhpTestCase):
    CONF = """\
threads = 2
listener 127.0.0.1:{port}
upstream down {
    server = unix:{dir}/down/php.sock
    keepalive = 2
    max_conns = 2
    connect_timeout = 10s
    read_timeout = 10s
}
site {
    root = {dir}/www
    fastcgi / {
        upstream = down
    }
}
"""
    POOLS = {"down": 2}

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {"pool.php": "pool.php"})

    def assertBadGatewayFast(self):
        start = time.monotonic()
        r = self.curl("/pool.php")
        elapsed = time.monotonic() - start
        self.assertEqual(r.status, 502, r.body)
        # connect_timeout is 10 s: waiting it out would be the bug.
        self.assertLess(elapsed, 3.0)

    def test_a_stopped_backend_is_502_at_once_and_a_restart_recovers(self):
        pool = self.pools["down"]
        self.assertEqual(self.curl("/pool.php").body, b"down")  # a kept connection now
        pool.stop()
        try:
            self.assertFalse(os.path.exists(pool.socket))
            self.assertBadGatewayFast()
            self.assertBadGatewayFast()
            # A socket file nobody listens on: connect() is refused.
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
                stale.bind(pool.socket)
                self.assertBadGatewayFast()
            os.unlink(pool.socket)
        finally:
            pool.start()
        for _ in range(5):
            r = self.curl("/pool.php")
            self.assertEqual((r.status, r.body), (200, b"down"))

    def test_a_backend_with_a_full_backlog_is_502_at_once(self):
        # connect() to a unix socket whose backlog is full fails with EAGAIN
        # at once: the backend is full, the connect is not in progress.
        pool = self.pools["down"]
        pool.stop()
        fillers = []
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as full:
                full.bind(pool.socket)
                full.listen(1)
                for _ in range(100):
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.setblocking(False)
                    try:
                        s.connect(pool.socket)
                    except BlockingIOError:
                        s.close()
                        break
                    fillers.append(s)
                else:
                    self.fail("the backlog never filled")
                self.assertBadGatewayFast()
            os.unlink(pool.socket)
        finally:
            for s in fillers:
                s.close()
            pool.start()
        self.assertEqual(self.curl("/pool.php").body, b"down")

    def test_a_restart_under_kept_connections_is_not_seen(self):
        pool = self.pools["down"]
        for _ in range(3):
            self.assertEqual(self.curl("/pool.php").body, b"down")
        pool.wait_connections(lambda n: n >= 1, what="a kept connection")
        # The kept connections die with the old pool; nothing was sent on
        # them yet, so weft retries on a fresh one.
        pool.restart()
        for _ in range(3):
            r = self.curl("/pool.php")
            self.assertEqual((r.status, r.body), (200, b"down"))


class SlowBackend(PhpTestCase):
    """read_timeout, and clients that leave: backend connections never end
    up in a bad state or leak. Both upstreams allow one connection, so a
    connection weft forgot to give back would stop everything."""

    CONF = """\
threads = 2
listener 127.0.0.1:{port}
upstream slow {
    server = unix:{dir}/slow/php.sock
    keepalive = 1
    max_conns = 1
    read_timeout = 1s
    queue_timeout = 5s
}
upstream held {
    server = unix:{dir}/held/php.sock
    keepalive = 1
    max_conns = 1
    read_timeout = 30s
    queue_timeout = 3s
}
site {
    host = slow.test
    root = {dir}/www
    fastcgi / {
        upstream = slow
    }
}
site {
    host = held.test
    root = {dir}/www
    fastcgi / {
        upstream = held
    }
}
"""
    POOLS = {"slow": 2, "held": 2}  # a pool each, so each count is one upstream's

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {"hold.php": "hold.php", "echo.php": "echo.php"})

    def setUp(self):
        self.held = []
        self.addCleanup(self.release_all)

    def release_all(self):
        for id in self.held:
            self.marks.release(id)
        for id in self.held:
            self.marks.wait("done", id, timeout=30)

    def hold_id(self):
        id = uuid.uuid4().hex[:12]
        self.held.append(id)
        return id

    def echo(self, host, v):
        c, r = self.roundtrip(get(f"/echo.php?v={v}", host=host))
        return r.status, r.body

    def test_a_script_slower_than_read_timeout_is_504_and_its_connection_is_not_reused(self):
        id = self.hold_id()
        c, r = self.roundtrip(get(f"/hold.php?id={id}", host="slow.test"))
        self.assertEqual(r.status, 504, r)
        self.assertFalse(self.marks.exists("done", id))
        # The script still runs; the only connection weft may open is free.
        self.assertEqual(self.echo("slow.test", "while-held"), (200, b"while-held"))
        # Now the late output is written to the connection of the 504.
        self.marks.release(id)
        self.marks.wait("done", id)
        for i in range(3):
            self.assertEqual(self.echo("slow.test", f"after-{i}"), (200, f"after-{i}".encode()))
        self.pools["slow"].wait_connections(lambda n: n <= 1, what="at most keepalive = 1")

    def test_a_client_that_leaves_frees_its_backend_connection(self):
        id = self.hold_id()
        c = Client(self.port)
        c.send(get(f"/hold.php?id={id}", host="held.test"))
        self.marks.wait("started", id)
        time.sleep(0.3)
        c.close()
        # The script still holds its worker, but weft gave the connection
        # up: the next request gets the one connection allowed.
        self.assertEqual(self.echo("held.test", "next"), (200, b"next"))
        self.assertFalse(self.marks.exists("done", id), "the held script was not held")
        self.marks.release(id)
        self.marks.wait("done", id)
        self.pools["held"].wait_connections(lambda n: n <= 1, what="at most keepalive = 1")
        self.assertEqual(self.echo("held.test", "last"), (200, b"last"))

    def test_a_client_that_leaves_the_queue_takes_nothing_with_it(self):
        id = self.hold_id()
        holder = Client(self.port, timeout=30)
        self.addCleanup(holder.close)
        holder.send(get(f"/hold.php?id={id}", host="held.test"))
        self.marks.wait("started", id)
        # Waits for the one connection, and leaves.
        for _ in range(3):
            quitter = Client(self.port)
            quitter.send(get("/echo.php?v=never", host="held.test"))
            time.sleep(0.2)
            quitter.close()
        self.marks.release(id)
        r = holder.response()
        self.assertEqual((r.status, r.body), (200, f"late {id}\n".encode()))
        self.assertEqual(self.echo("held.test", "then"), (200, b"then"))


class Queue(PhpTestCase):
    """max_conns busy: a request waits its turn, up to queue_timeout."""

    CONF = """\
threads = 2
listener 127.0.0.1:{port}
upstream one {
    server = unix:{dir}/queue/php.sock
    keepalive = 1
    max_conns = 1
    queue_timeout = 10s
}
upstream short {
    server = unix:{dir}/queue/php.sock
    keepalive = 1
    max_conns = 1
    queue_timeout = 1s
}
site {
    host = one.test
    root = {dir}/www
    fastcgi / {
        upstream = one
    }
}
site {
    host = short.test
    root = {dir}/www
    fastcgi / {
        upstream = short
    }
}
"""
    POOLS = {"queue": 3}

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {"hold.php": "hold.php", "echo.php": "echo.php"})

    def start_request(self, path, host):
        """Sends a request on its own thread; returns (thread, result list)."""
        result = []
        c = Client(self.port, timeout=30)
        self.addCleanup(c.close)
        c.send(get(path, host=host))

        def read():
            try:
                r = c.response()
                result.append((r.status, r.body))
            except Exception as e:
                result.append((None, repr(e).encode()))
        t = threading.Thread(target=read)
        t.start()
        return t, result

    def hold(self, host):
        id = uuid.uuid4().hex[:12]
        self.addCleanup(self.marks.release, id)
        t, result = self.start_request(f"/hold.php?id={id}", host)
        self.marks.wait("started", id)
        return id, t, result

    def test_a_request_waits_for_a_free_connection(self):
        id, holder, held = self.hold("one.test")
        waiter, waited = self.start_request("/echo.php?v=waited", "one.test")
        waiter.join(0.5)
        self.assertEqual(waited, [], "answered while max_conns = 1 was busy")
        self.assertLessEqual(self.pools["queue"].connections(), 1)
        self.marks.release(id)
        holder.join(20)
        waiter.join(20)
        self.assertEqual(held, [(200, f"late {id}\n".encode())])
        self.assertEqual(waited, [(200, b"waited")])

    def test_a_wait_longer_than_queue_timeout_is_503(self):
        id, holder, held = self.hold("short.test")
        c, r = self.roundtrip(get("/echo.php?v=late", host="short.test"), timeout=8)
        self.assertEqual(r.status, 503, r)
        self.assertFalse(self.marks.exists("done", id))
        self.marks.release(id)
        holder.join(20)
        self.assertEqual(held, [(200, f"late {id}\n".encode())])
        c, r = self.roundtrip(get("/echo.php?v=then", host="short.test"))
        self.assertEqual((r.status, r.body), (200, b"then"))


class Failover(PhpTestCase):
    CONF = """\
threads = 2
listener 127.0.0.1:{port}
upstream pair {
    server = unix:{dir}/a/php.sock
    server = unix:{dir}/b/php.sock
    keepalive = 2
    max_conns = 4
    connect_timeout = 2s
}
site {
    root = {dir}/www
    fastcgi / {
        upstream = pair
    }
}
"""
    POOLS = {"a": 2, "b": 2}

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {"pool.php": "pool.php"})

    def answers(self, n):
        seen = []
        for _ in range(n):
            r = self.curl("/pool.php")
            self.assertEqual(r.status, 200, r.body)
            seen.append(r.body.decode())
        return seen

    def test_requests_go_to_both_and_to_the_other_when_one_stops(self):
        self.assertEqual(set(self.answers(10)), {"a", "b"})
        self.pools["b"].stop()
        try:
            self.assertEqual(set(self.answers(10)), {"a"})
        finally:
            self.pools["b"].start()
        self.assertTrue(set(self.answers(10)) <= {"a", "b"})


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
