#!/usr/bin/env python3
"""What real PHP applications and an attacker tripped on, against a real
php-fpm8.2:

- a script that redirects locally (Location, no Status) to a directory
  whose index is a script, with a long path: the index runs (its name once
  wrote past a heap buffer, and any client could pick the path);
- the add-a-slash 301 names the normalised path, never //host or /\\host;
- WebDAV's methods reach PHP, with their bodies;
- /.well-known is served, other hidden files are not, and a hidden segment
  that names nothing is a route for the front controller (/wiki/.NET);
- `index` is a list: the first that exists runs or is served;
- SERVER_NAME is the site's name, HTTP_HOST what the client sent;
- a client that half-closes after its request gets its answer or a clean
  close, never a 500;
- backups and sources next to the scripts are never served raw.

    test_php_hardening.py WEFT_BINARY
"""
import json
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import get  # noqa: E402
from php_support import PhpTestCase, install_fixtures  # noqa: E402

SECRET = b"TOP SECRET"
LONG_DIR = "/".join(["d" * 60] * 6)  # a few hundred bytes of directories

CONF = """\
threads = 1
access_log = stderr
listener 127.0.0.1:{port}
upstream php {
    server = unix:{dir}/php/php.sock
    read_timeout = 10s
}
site {
    host = wiki.example www.wiki.example
    root = {dir}/www
    fastcgi / {
        upstream = php
        index = index.html index.php
        fallback = /index.php
    }
}
site {
    host = nameless.example
    root = {dir}/www
    fastcgi / {
        upstream = php
    }
}
"""

INFO = "info.php"
NEXT = b"<?php header('Location: ' . $_GET['next'], true, 200);\n"
SOURCE = b"<?php $password = 'TOP SECRET';\n"


class PhpHardening(PhpTestCase):
    CONF = CONF
    POOLS = {"php": 2}

    @classmethod
    def setUpDir(cls, dir):
        www = os.path.join(dir, "www")
        layout = {
            "index.php": INFO,
            "info.php": INFO,
            "next.php": NEXT,
            LONG_DIR + "/index.php": INFO,
            "php-only/index.php": INFO,
            "both/index.php": INFO,
            "both/index.html": b"<p>static first</p>\n",
            "dir/readme.txt": b"readme\n",
            ".well-known/acme-challenge/Tok3n": b"Tok3n.thumbprint",
            ".env": SECRET,
            ".git/config": SECRET,
        }
        for name in ("config.php~", "config.php.bak", "#config.php#", "config.php.orig",
                     "config.php.save", ".config.php.swp", "config.phtml", "config.php5"):
            layout["app/" + name] = SOURCE
        install_fixtures(www, layout)

    def php_vars(self, request):
        c, r = self.roundtrip(request)
        self.assertEqual(r.status, 200, r)
        return json.loads(r.body)["server"]

    def test_a_local_redirect_to_a_directory_runs_its_index_script(self):
        for _ in range(3):
            v = self.php_vars(get(f"/next.php?next=/{LONG_DIR}/", host="wiki.example"))
            self.assertEqual(v["SCRIPT_NAME"], f"/{LONG_DIR}/index.php")
            self.assertEqual(v["REQUEST_METHOD"], "GET")
        self.assertIsNone(self.weft.process.poll(), self.weft.stderr())

    def test_the_add_a_slash_redirect_never_names_another_site(self):
        for raw in ("//evil.example/../dir", "/\\evil.example/../dir", "/dir"):
            with self.subTest(path=raw):
                c, r = self.roundtrip(get(raw, host="wiki.example"))
                self.assertEqual(r.status, 301, r)
                self.assertEqual(r.header("location"), "/dir/")

    def test_webdav_methods_reach_php_with_their_bodies(self):
        body = '<?xml version="1.0"?><propfind xmlns="DAV:"><allprop/></propfind>'
        for method in ("PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK",
                       "REPORT", "SEARCH"):
            with self.subTest(method=method):
                v = self.php_vars(f"{method} /info.php/files/a HTTP/1.1\r\nHost: wiki.example\r\n"
                                  f"Depth: 1\r\nContent-Type: application/xml\r\n"
                                  f"Content-Length: {len(body)}\r\n\r\n{body}")
                self.assertEqual(v["REQUEST_METHOD"], method)
                self.assertEqual(v["CONTENT_LENGTH"], str(len(body)))
                self.assertEqual(v["PATH_INFO"], "/files/a")
                self.assertEqual(v["HTTP_DEPTH"], "1")
        # A static file is no application's: 405 with what it allows.
        c, r = self.roundtrip("PROPFIND /dir/readme.txt HTTP/1.1\r\nHost: wiki.example\r\n\r\n")
        self.assertEqual(r.status, 405, r)
        self.assertEqual(r.header("allow"), "GET, HEAD")

    def test_well_known_is_served_and_hidden_files_are_not(self):
        r = self.curl("/.well-known/acme-challenge/Tok3n", host="wiki.example")
        self.assertEqual((r.status, r.body), (200, b"Tok3n.thumbprint"))
        for path in ("/.env", "/.git/config", "/.git/missing.php", "/.git/"):
            with self.subTest(path=path):
                r = self.curl(path, host="wiki.example")
                self.assertEqual(r.status, 403, r.body)
                self.assertNotIn(SECRET, r.body)

    def test_a_hidden_segment_that_names_nothing_goes_to_the_front_controller(self):
        v = self.php_vars(get("/wiki/.NET", host="wiki.example"))
        self.assertEqual(v["SCRIPT_NAME"], "/index.php")
        self.assertEqual(v["REQUEST_URI"], "/wiki/.NET")

    def test_index_is_a_list_and_the_first_that_exists_wins(self):
        r = self.curl("/both/", host="wiki.example")
        self.assertEqual((r.status, r.body), (200, b"<p>static first</p>\n"))
        v = self.php_vars(get("/php-only/", host="wiki.example"))
        self.assertEqual(v["SCRIPT_NAME"], "/php-only/index.php")
        # The default list is index.php alone.
        v = self.php_vars(get("/both/", host="nameless.example"))
        self.assertEqual(v["SCRIPT_NAME"], "/both/index.php")

    def test_server_name_is_the_sites_name_and_http_host_the_clients(self):
        v = self.php_vars(get("/info.php", host="www.wiki.example:8080"))
        self.assertEqual(v["SERVER_NAME"], "wiki.example")
        self.assertEqual(v["HTTP_HOST"], "www.wiki.example:8080")

    def test_a_client_that_half_closes_after_its_request_gets_no_error(self):
        for request in (get("/info.php", host="wiki.example", extra="Connection: close\r\n"),
                        "POST /info.php HTTP/1.1\r\nHost: wiki.example\r\nContent-Length: 3\r\n"
                        "Content-Type: application/x-www-form-urlencoded\r\n\r\na=1"):
            with self.subTest(request=request.split("\r\n")[0]):
                s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
                with s:
                    s.sendall(request.encode())
                    s.shutdown(socket.SHUT_WR)
                    data = b""
                    while chunk := s.recv(65536):
                        data += chunk
                # A proxy cannot tell a half-close from a client that left
                # (both are a FIN): it answers, or closes without a word,
                # as nginx does (499 in the access log). Never an error.
                if data:
                    self.assertTrue(data.startswith(b"HTTP/1.1 200 "), data[:200])
                    self.assertIn(b'"SCRIPT_NAME":"/info.php"', data)
        # The access log is written a second after its first line at most.
        deadline = time.monotonic() + 5
        while '" 499 0 ' not in self.weft.stderr() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertNotIn('" 500 ', self.weft.stderr())

    def test_backups_and_sources_next_to_scripts_are_never_served(self):
        for name in ("config.php~", "config.php.bak", "%23config.php%23", "config.php.orig",
                     "config.php.save", ".config.php.swp", "config.phtml", "config.php5"):
            with self.subTest(name=name):
                r = self.curl("/app/" + name, host="wiki.example")
                self.assertEqual(r.status, 403, r.body)
                self.assertNotIn(SECRET, r.body)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
