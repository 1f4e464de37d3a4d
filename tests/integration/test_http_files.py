#!/usr/bin/env python3
"""weft's `files` handler, run for real: no way out of the root, dotfiles and
denied prefixes, types, validators and 304s, ranges, directories, listings,
precompressed twins, big and changing files.

    test_http_files.py WEFT_BINARY
"""
import email.utils
import gzip
import hashlib
import os
import re
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, get  # noqa: E402

SECRET = b"TOP SECRET"
RANGE = b"0123456789abcdefghijklmnopqrstuvwxyz"  # 36 bytes
PLAIN = b"plain text, served as is or gzipped\n" * 20

CONF = """\
threads = 2
request_timeout = 2s
keep_alive_timeout = 3s
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files / {
        deny = /private
        listing = on
        precompressed = on
    }
}
"""


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


class Files(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        www = os.path.join(d, "www")
        # Secrets outside the root, and two symlinks in it that point at them.
        write(os.path.join(d, "secret.txt"), SECRET + b" 1\n")
        write(os.path.join(d, "outside", "secret.txt"), SECRET + b" 2\n")
        write(os.path.join(www, "index.html"), "<h1>home</h1>\n")
        os.symlink("../secret.txt", os.path.join(www, "link.txt"))
        os.symlink("../outside", os.path.join(www, "outdir"))
        write(os.path.join(www, ".env"), SECRET + b" env\n")
        write(os.path.join(www, ".git", "config"), SECRET + b" git\n")
        write(os.path.join(www, "private", "x.txt"), SECRET + b" private\n")
        write(os.path.join(www, "range.txt"), RANGE)
        for ext in ["html", "css", "js", "png", "json", "svg"]:
            write(os.path.join(www, "types", f"m.{ext}"), f"m.{ext}\n")
        write(os.path.join(www, "dir", "index.html"), "<p>dir index</p>\n")
        write(os.path.join(www, "list", "<b>&.txt"), "escaped\n")
        write(os.path.join(www, "list", "plain.txt"), "plain\n")
        write(os.path.join(www, "a.txt"), PLAIN)
        write(os.path.join(www, "a.txt.gz"), gzip.compress(PLAIN))
        cls.big = os.urandom(1 << 20)
        write(os.path.join(www, "big.bin"), cls.big)
        write(os.path.join(www, "fresh.txt"), "version one\n")

    def assertNoSecret(self, path):
        c, r = self.roundtrip(get(path))
        self.assertNotIn(SECRET, r.body, f"{path} gave away a secret")
        self.assertIn(r.status, (400, 403, 404), r)
        return r

    # --- no way out of the root ---
    def test_traversal_attempts_do_not_reach_files_outside_the_root(self):
        for path in ["/../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt",
                     "/%2e%2e%2fsecret.txt", "/a/../../secret.txt", "/%252e%252e/secret.txt",
                     "/%252e%252e%252fsecret.txt", "/..%5csecret.txt", "/.%2e/secret.txt",
                     "/dir/../../secret.txt", "//../secret.txt", "/./../secret.txt"]:
            with self.subTest(path=path):
                self.assertNoSecret(path)

    def test_a_nul_in_the_path_is_refused(self):
        for path in ["/a.txt%00", "/a.txt%00.html", "/range.txt%00/x"]:
            with self.subTest(path=path):
                self.assertNoSecret(path)
                c, r = self.roundtrip(get(path))
                self.assertNotEqual(r.status, 200)

    def test_an_absolute_form_target_does_not_climb_either(self):
        c, r = self.roundtrip("GET http://a/../secret.txt HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertNotIn(SECRET, r.body)
        self.assertIn(r.status, (400, 403, 404))

    def test_a_symlink_to_a_file_outside_the_root_is_not_followed(self):
        self.assertNoSecret("/link.txt")

    def test_a_symlinked_directory_outside_the_root_is_not_followed(self):
        self.assertNoSecret("/outdir/secret.txt")
        self.assertNoSecret("/outdir/")

    def test_dotfiles_are_403(self):
        for path in ["/.env", "/.git/config", "/.git/", "/list/.env"]:
            with self.subTest(path=path):
                r = self.assertNoSecret(path)
                if path != "/list/.env":
                    self.assertEqual(r.status, 403)

    def test_a_denied_prefix_is_403(self):
        for path in ["/private", "/private/", "/private/x.txt", "/private/nothing"]:
            with self.subTest(path=path):
                self.assertEqual(self.assertNoSecret(path).status, 403)

    # --- what a file is sent with ---
    def test_content_types_by_extension(self):
        for ext, types in [("html", ["text/html"]), ("css", ["text/css"]),
                           ("js", ["text/javascript", "application/javascript"]),
                           ("png", ["image/png"]), ("json", ["application/json"]),
                           ("svg", ["image/svg+xml"])]:
            with self.subTest(ext=ext):
                r = self.curl(f"/types/m.{ext}")
                self.assertEqual(r.status, 200)
                self.assertEqual(r.body, f"m.{ext}\n".encode())
                media = (r.header("content-type") or "").split(";")[0].strip()
                self.assertIn(media, types)

    def test_etag_and_last_modified_are_sent(self):
        r = self.curl("/range.txt")
        self.assertEqual(r.status, 200)
        self.assertRegex(r.header("etag") or "", r'^(W/)?"[^"]+"$')
        mtime = os.stat(os.path.join(self.dir, "www", "range.txt")).st_mtime
        last_modified = email.utils.parsedate_to_datetime(r.header("last-modified")).timestamp()
        self.assertEqual(last_modified, int(mtime))

    def test_if_none_match_is_304(self):
        etag = self.curl("/range.txt").header("etag")
        c = self.connect()
        c.send(get("/range.txt", extra=f"If-None-Match: {etag}\r\n") +
               get("/range.txt", extra='If-None-Match: "something-else"\r\n'))
        r = c.response()
        self.assertEqual(r.status, 304, r)
        self.assertEqual(r.header("etag"), etag)
        r = c.response()  # a body after the 304 would break this one's framing
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, RANGE)

    def test_if_modified_since_is_304(self):
        last_modified = self.curl("/range.txt").header("last-modified")
        r = self.curl("/range.txt", "-H", f"If-Modified-Since: {last_modified}")
        self.assertEqual(r.status, 304)
        self.assertEqual(r.body, b"")
        r = self.curl("/range.txt", "-H", "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, RANGE)

    def test_head_sends_the_length_and_no_body(self):
        c = self.connect()
        c.send("HEAD /big.bin HTTP/1.1\r\nHost: a\r\n\r\n" + get("/range.txt"))
        r = c.response(head=True)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("content-length"), str(1 << 20))
        self.assertEqual(c.response().body, RANGE)

    def test_a_missing_file_is_404(self):
        c, r = self.roundtrip(get("/no-such-file.txt"))
        self.assertEqual(r.status, 404)
        self.assertCommonHeaders(r)
        self.assertStillOpen(c)

    # --- ranges ---
    def test_a_single_range_is_206(self):
        n = len(RANGE)
        for spec, start, end in [("0-4", 0, 4), ("-5", n - 5, n - 1), ("10-", 10, n - 1),
                                 ("30-100", 30, n - 1), ("35-35", 35, 35)]:
            with self.subTest(range=spec):
                c, r = self.roundtrip(get("/range.txt", extra=f"Range: bytes={spec}\r\n"))
                self.assertEqual(r.status, 206, r)
                self.assertEqual(r.header("content-range"), f"bytes {start}-{end}/{n}")
                self.assertEqual(r.body, RANGE[start:end + 1])
                self.assertEqual(r.header("content-length"), str(end + 1 - start))

    def test_an_unsatisfiable_range_is_416(self):
        for spec in ["100-200", "36-"]:
            with self.subTest(range=spec):
                c, r = self.roundtrip(get("/range.txt", extra=f"Range: bytes={spec}\r\n"))
                self.assertEqual(r.status, 416, r)
                self.assertEqual(r.header("content-range"), f"bytes */{len(RANGE)}")

    def test_multiple_ranges_are_multipart_or_the_whole_file(self):
        c, r = self.roundtrip(get("/range.txt", extra="Range: bytes=0-1,5-6,-3\r\n"))
        if r.status == 200:
            self.assertEqual(r.body, RANGE)
            return
        self.assertEqual(r.status, 206, r)
        m = re.fullmatch(r'multipart/byteranges;\s*boundary="?([^";]+)"?', r.header("content-type"))
        self.assertIsNotNone(m, r.header("content-type"))
        parts = self.parse_multipart(r.body, m.group(1).encode())
        n = len(RANGE)
        self.assertEqual(parts, [(f"bytes 0-1/{n}", RANGE[0:2]), (f"bytes 5-6/{n}", RANGE[5:7]),
                                 (f"bytes {n - 3}-{n - 1}/{n}", RANGE[n - 3:])])

    def parse_multipart(self, body, boundary):
        self.assertTrue(body.startswith(b"--" + boundary + b"\r\n") or
                        body.startswith(b"\r\n--" + boundary + b"\r\n"), body[:80])
        self.assertTrue(body.endswith(b"\r\n--" + boundary + b"--\r\n"), body[-80:])
        parts = []
        chunks = body.split(b"--" + boundary)
        self.assertIn(chunks[-1], (b"--\r\n", b"--"))
        for chunk in chunks[1:-1]:
            self.assertTrue(chunk.startswith(b"\r\n") and chunk.endswith(b"\r\n"), chunk)
            head, _, data = chunk[2:-2].partition(b"\r\n\r\n")
            fields = dict((k.strip().lower(), v.strip()) for k, _, v in
                          (line.decode().partition(":") for line in head.split(b"\r\n")))
            self.assertEqual(fields.get("content-type", "").split(";")[0], "text/plain")
            parts.append((fields["content-range"], data))
        return parts

    # --- directories ---
    def test_a_directory_with_a_slash_serves_its_index(self):
        r = self.curl("/dir/")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, b"<p>dir index</p>\n")
        self.assertEqual(r.header("content-type").split(";")[0], "text/html")
        self.assertEqual(self.curl("/").body, b"<h1>home</h1>\n")

    def test_a_directory_without_a_slash_is_redirected(self):
        for path, location in [("/dir", "/dir/"), ("/list", "/list/")]:
            with self.subTest(path=path):
                r = self.curl(path)
                self.assertEqual(r.status, 301)
                self.assertEqual(urllib.parse.urlsplit(r.header("location")).path, location)

    def test_a_listing_escapes_names(self):
        r = self.curl("/list/")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("content-type").split(";")[0], "text/html")
        self.assertIn(b"&lt;b&gt;&amp;.txt", r.body)
        self.assertIn(b"plain.txt", r.body)
        self.assertNotIn(b"<b>&", r.body)

    # --- precompressed twins ---
    def test_a_gzip_twin_is_sent_to_clients_that_accept_it(self):
        for accept in ["gzip", "deflate, gzip", "br;q=1, gzip;q=0.5"]:
            with self.subTest(accept=accept):
                c, r = self.roundtrip(get("/a.txt", extra=f"Accept-Encoding: {accept}\r\n"))
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.header("content-encoding"), "gzip")
                self.assertIn("accept-encoding", (r.header("vary") or "").lower())
                self.assertEqual(r.header("content-type").split(";")[0], "text/plain")
                self.assertEqual(gzip.decompress(r.body), PLAIN)

    def test_without_accept_encoding_the_plain_file_is_sent(self):
        c, r = self.roundtrip(get("/a.txt"))
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.header("content-encoding"))
        self.assertEqual(r.body, PLAIN)

    # --- bodies ---
    def test_a_mebibyte_file_downloads_intact(self):
        r = self.curl("/big.bin")
        self.assertEqual(r.status, 200)
        self.assertEqual(hashlib.sha256(r.body).hexdigest(), hashlib.sha256(self.big).hexdigest())

    def test_a_file_changed_on_disk_is_served_fresh(self):
        self.assertEqual(self.curl("/fresh.txt").body, b"version one\n")
        write(os.path.join(self.dir, "www", "fresh.txt"), "version two, longer\n")
        time.sleep(1.2)  # the cache may be up to a second stale
        self.assertEqual(self.curl("/fresh.txt").body, b"version two, longer\n")

    def test_post_and_extension_methods_to_a_file_are_405_with_allow(self):
        for method in ("POST", "PROPFIND", "MKCOL", "LOCK"):
            with self.subTest(method=method):
                c, r = self.roundtrip(f"{method} /range.txt HTTP/1.1\r\nHost: a\r\n"
                                      "Content-Length: 3\r\n\r\nabc")
                self.assertEqual(r.status, 405, r)
                allow = [m.strip() for m in (r.header("allow") or "").split(",")]
                self.assertEqual(allow, ["GET", "HEAD"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
