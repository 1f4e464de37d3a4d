#!/usr/bin/env python3
"""weft's fastcgi handler in front of a real php-fpm8.2: request bodies
(forms, a multipart upload, chunked bodies, Content-Length).

    test_php_bodies.py WEFT_BINARY
"""
import hashlib
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from php_support import SiteTestCase  # noqa: E402


def body_summary(data):
    """What body.php answers for a body of `data`: length as sent, bytes read, md5."""
    return f"{len(data)} {len(data)} {hashlib.md5(data).hexdigest()}"


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


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
