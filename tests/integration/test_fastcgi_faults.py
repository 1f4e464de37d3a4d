#!/usr/bin/env python3
"""The fastcgi handler against a scripted FastCGI backend (a thread on a unix
socket in a temp dir), for backend behaviour a real PHP-FPM shows only now
and then:

- a CGI head the parser refuses: 502, logged with its reason, and weft
  serves on (the reason was read from a connection already freed);
- a kept connection the backend shuts down right after END_REQUEST, as
  PHP-FPM does after pm.max_requests (shutdown, then drain until weft
  closes): the next request, GET or POST, must get a fresh connection, not
  wait for read_timeout on the dead one.

- a local redirect (RFC 3875 §6.2.2: a Location that is a local path, no
  Status): weft runs the script it names as a GET, or, for anything but a
  script, lets the client follow a 302;
- data after END_REQUEST: the response stands, the connection is not kept;
- a local redirect to a directory (trailing slash) whose index is a script,
  with a long path: the index runs (its name once wrote past a heap buffer).

    test_fastcgi_faults.py WEFT_BINARY
"""
import os
import socket
import struct
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase  # noqa: E402

CONF = """\
threads = 1
listener 127.0.0.1:{port}
upstream bad {
    server = unix:{dir}/bad.sock
    read_timeout = 2s
}
upstream scripted {
    server = unix:{dir}/scripted.sock
    keepalive = 4
    read_timeout = 2s
}
upstream recycling {
    server = unix:{dir}/recycling.sock
    keepalive = 4
    max_conns = 1
    read_timeout = 2s
}
site {
    root = {dir}/www
    fastcgi /bad {
        upstream = bad
    }
    fastcgi /recycling {
        upstream = recycling
    }
    fastcgi /scripted {
        upstream = scripted
    }
}
"""

BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT = 1, 3, 4, 5, 6


def record(kind, request_id, content=b""):
    return struct.pack(">BBHHBB", 1, kind, request_id, len(content), 0, 0) + content


def end_request(request_id):
    return record(END_REQUEST, request_id, struct.pack(">IB3x", 0, 0))


class Backend:
    """Accepts on `path`; answers each request with answer(request_id) and
    then, if `shut_after` is set, shuts its side down after that many
    requests on a connection and drains it until weft closes, as PHP-FPM
    does when a child reaches pm.max_requests."""

    def __init__(self, path, answer, shut_after=None):
        self.answer, self.shut_after = answer, shut_after
        self.connections = 0
        self.shut = threading.Event()  # set when a connection was shut
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _read_request(conn, buf):
        """(request id, params, rest of buf) once a request's empty STDIN
        came; None at EOF."""
        params = b""
        while True:
            while len(buf) >= 8:
                _, kind, request_id, length, padding, _ = struct.unpack(">BBHHBB", buf[:8])
                if len(buf) < 8 + length + padding:
                    break
                if kind == PARAMS:
                    params += buf[8:8 + length]
                buf = buf[8 + length + padding:]
                if kind == STDIN and length == 0:
                    return request_id, decode_params(params), buf
            data = conn.recv(65536)
            if not data:
                return None
            buf += data

    def _serve(self, conn):
        with conn:
            buf, served = b"", 0
            while True:
                got = self._read_request(conn, buf)
                if got is None:
                    return
                request_id, params, buf = got
                conn.sendall(self.answer(request_id, params))
                served += 1
                if self.shut_after is not None and served == self.shut_after:
                    conn.shutdown(socket.SHUT_WR)
                    self.shut.set()
                    while conn.recv(65536):
                        pass
                    return

    def close(self):
        self.listener.close()


def decode_params(data):
    """The name-value pairs of a PARAMS stream, as a dict of str."""
    def length(at):
        if data[at] < 128:
            return data[at], at + 1
        return struct.unpack(">I", data[at:at + 4])[0] & 0x7FFFFFFF, at + 4
    pairs, at = {}, 0
    while at < len(data):
        name_length, at = length(at)
        value_length, at = length(at)
        name = data[at:at + name_length].decode()
        at += name_length
        pairs[name] = data[at:at + value_length].decode()
        at += value_length
    return pairs


def scripted(request_id, params):
    """What /scripted/*.php answer, by SCRIPT_NAME."""
    script = params["SCRIPT_NAME"]
    if script == "/scripted/first.php":  # a local redirect: Location, no Status
        head = b"Location: /scripted/target.php?v=1\r\n\r\n"
    elif script == "/scripted/away.php":  # a local path that is no script
        head = b"Location: /scripted/style.css\r\n\r\n"
    elif script == "/scripted/todir.php":  # to a directory: its index script runs
        head = b"Location: /scripted/" + LONG_DIR.encode() + b"/?to=dir\r\n\r\n"
    elif script == "/scripted/longaway.php":  # a Location too long for any head
        head = b"Location: /scripted/" + b"a" * 5000 + b"\r\n\r\n"
    elif script == "/scripted/overlong.php":  # more body than its Content-Length
        body = b"0123456789" + b"x" * 60000
        return (record(STDOUT, request_id, b"Content-Length: 10\r\n\r\n" + body[:30000])
                + record(STDOUT, request_id, body[30000:]) + record(STDOUT, request_id)
                + end_request(request_id))
    elif script == "/scripted/trailing.php":  # bytes after END_REQUEST
        return good(request_id, params) + record(STDOUT, request_id, b"late")
    else:
        seen = " ".join(params[k] for k in ("REQUEST_METHOD", "REQUEST_URI", "QUERY_STRING",
                                             "CONTENT_LENGTH"))
        head = b"Content-Type: text/plain\r\n\r\n" + seen.encode()
    return record(STDOUT, request_id, head) + record(STDOUT, request_id) + end_request(request_id)


# A directory path of a few hundred bytes, in segments a file system takes.
LONG_DIR = "/".join(["d" * 60] * 6)


def bad_head(request_id, params=None):
    return (record(STDOUT, request_id, b"this line has no colon\r\n\r\nbody")
            + end_request(request_id))


def good(request_id, params=None):
    return (record(STDOUT, request_id, b"Content-Type: text/plain\r\n\r\nfine")
            + record(STDOUT, request_id) + end_request(request_id))


class BackendFaults(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        for prefix in ("bad", "recycling", "scripted"):
            os.makedirs(os.path.join(dir, "www", prefix))
            with open(os.path.join(dir, "www", prefix, "x.php"), "w") as f:
                f.write("<?php\n")
        deep = os.path.join(dir, "www", "scripted", LONG_DIR)
        os.makedirs(deep)
        with open(os.path.join(deep, "index.php"), "w") as f:
            f.write("<?php\n")
        for name in ("first.php", "away.php", "target.php", "trailing.php", "style.css",
                     "todir.php", "overlong.php", "longaway.php"):
            with open(os.path.join(dir, "www", "scripted", name), "w") as f:
                f.write("<?php\n" if name.endswith(".php") else "body {}\n")
        cls.bad = Backend(os.path.join(dir, "bad.sock"), bad_head)
        cls.recycling = Backend(os.path.join(dir, "recycling.sock"), good, shut_after=1)
        cls.scripted = Backend(os.path.join(dir, "scripted.sock"), scripted)

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.bad.close()
            cls.recycling.close()
            cls.scripted.close()

    def test_a_refused_cgi_head_is_502_with_its_reason(self):
        for _ in range(3):
            c, r = self.roundtrip("GET /bad/x.php HTTP/1.1\r\nHost: a\r\n\r\n")
            self.assertEqual(r.status, 502, r)
        self.assertIn("a head line without a colon", self.weft.stderr())
        self.assertIsNone(self.weft.process.poll(), self.weft.stderr())

    def test_a_connection_the_backend_shut_is_not_reused(self):
        requests = [
            "GET /recycling/x.php HTTP/1.1\r\nHost: a\r\n\r\n",
            "POST /recycling/x.php HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\na=1",
        ]
        for i in range(12):
            c, r = self.roundtrip(requests[i % 2], timeout=10.0)
            self.assertEqual((r.status, r.body), (200, b"fine"),
                             f"request {i}: {r}\n{self.weft.stderr()}")
            # The next request comes after the shutdown, as it does after
            # PHP-FPM's (which follows its END_REQUEST at once).
            self.assertTrue(self.recycling.shut.wait(5.0))
            self.recycling.shut.clear()
        self.assertNotIn("read_timeout", self.weft.stderr())

    def test_a_local_redirect_runs_the_script_it_names_as_a_get(self):
        c, r = self.roundtrip("POST /scripted/first.php HTTP/1.1\r\nHost: a\r\n"
                              "Content-Length: 3\r\n\r\na=1")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"GET /scripted/target.php?v=1 v=1 ")

    def test_a_local_redirect_to_no_script_is_left_to_the_client(self):
        c, r = self.roundtrip("GET /scripted/away.php HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual(r.status, 302, r)
        self.assertEqual(r.header("location"), "/scripted/style.css")

    def test_a_local_redirect_to_a_directory_runs_its_index_script(self):
        for _ in range(3):
            c, r = self.roundtrip("GET /scripted/todir.php HTTP/1.1\r\nHost: a\r\n\r\n")
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.body, f"GET /scripted/{LONG_DIR}/?to=dir to=dir ".encode())
        self.assertIsNone(self.weft.process.poll(), self.weft.stderr())

    def test_a_body_past_its_content_length_is_cut_there_and_logged(self):
        connections = self.scripted.connections
        c = self.connect()
        for _ in range(2):
            c.send("GET /scripted/overlong.php HTTP/1.1\r\nHost: a\r\n\r\n")
            r = c.response()
            self.assertEqual((r.status, r.body), (200, b"0123456789"), r)
        # The client's connection goes on; the backend's is not kept.
        self.assertEqual(self.scripted.connections - connections, 2)
        self.assertIn("the backend sent more than its Content-Length", self.weft.stderr())

    def test_a_location_too_long_for_a_head_is_the_backends_fault(self):
        c, r = self.roundtrip("GET /scripted/longaway.php HTTP/1.1\r\nHost: a\r\n\r\n")
        self.assertEqual(r.status, 502, r)
        self.assertIn("Location does not fit", self.weft.stderr())

    def test_bytes_after_end_request_leave_the_answer_and_drop_the_connection(self):
        connections = self.scripted.connections
        for _ in range(2):
            c, r = self.roundtrip("GET /scripted/trailing.php HTTP/1.1\r\nHost: a\r\n\r\n")
            self.assertEqual((r.status, r.body), (200, b"fine"), r)
        # Each needed a connection of its own: the confused one was not kept.
        self.assertEqual(self.scripted.connections - connections, 2)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
