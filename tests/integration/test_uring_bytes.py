#!/usr/bin/env python3
"""Issue 19 stage 2: on the uring backend a parked connection's next bytes
come with a ring receive into a provided buffer (128 x 4 KiB per loop), and
a response that fits a 16 KiB send slot goes out through the ring. Each
case runs on real sockets against weft started with WEFT_IO_BACKEND=uring,
and the same case against WEFT_IO_BACKEND=epoll (subtests), which must
behave the same: keep-alive over every size around 4 KiB and 16 KiB,
HEAD, Range and 304; pipelining; heads larger than a receive buffer; a
request with its FIN; a client that does not read (sends in flight when
the connection closes: orphans, no fd left behind); more parked
connections than receive buffers, all woken at once; a WebSocket and an
event stream handed over after a keep-alive request; a file changed on
disk seen by the very next request (on uring too for a cached file sent
by a syscall, review 19c's stale file); SIGTERM
with downloads under way.

    test_uring_bytes.py WEFT_BINARY
"""
import fcntl
import json
import os
import re
import signal
import socket
import struct
import sys
import tempfile
import termios
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Client, Closed, curl, fd_count, fds, get, start_on_backend, wait_for  # noqa: E402
from websocket_support import TEXT, WebSocket  # noqa: E402

BACKENDS = ("epoll", "uring")
SLOT = 16 * 1024  # Ring::kSendSlotSize
SIZES = [0, 13, 4095, 4096, 4097, SLOT - 1, SLOT, SLOT + 1, 100 * 1024]
BIG = 100 * 1024
MID = 12 * 1024

CONF = """\
threads = {threads}
keep_alive_timeout = {keep_alive}
send_timeout = 10s
shutdown_timeout = 2s
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files / {
    }
    pubsub /live {
        history = 3
    }
    status /server-status {
    }
}
"""


def head_of(path, total, method="GET"):
    """A request head for `path` exactly `total` bytes long, padded with
    X-Fill fields of at most 1000 bytes each."""
    start = f"{method} {path} HTTP/1.1\r\nHost: a\r\n"
    fields = []
    left = total - len(start) - 2
    n = 0
    while left > 0:
        name = f"X-Fill-{n}: "
        room = min(1000, left - len(name) - 2)
        if room < 1:  # too little left for a field of its own: widen the last
            fields[-1] = fields[-1][:-2] + "b" * left + "\r\n"
            break
        fields.append(name + "a" * room + "\r\n")
        left -= len(name) + room + 2
        n += 1
    text = start + "".join(fields) + "\r\n"
    assert len(text) == total, (len(text), total)
    return text.encode()


def server_send_queue(port, client_port):
    """The bytes weft's socket of the connection from `client_port` holds
    unacknowledged (/proc/net/tcp's tx_queue), or None when it is gone."""
    local = f"0100007F:{port:04X}"
    remote = f"0100007F:{client_port:04X}"
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[2] == remote:
                return int(fields[4].split(":")[0], 16)
    return None


def unread(sock):
    """The bytes in `sock`'s receive queue."""
    return struct.unpack("i", fcntl.ioctl(sock, termios.FIONREAD, b"\0\0\0\0"))[0]


def read_to_eof(sock, timeout):
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data, "reset"
        if not chunk:
            return data, "eof"
        data += chunk


def head_length(r):
    """The bytes of a response's head as sent (weft writes "Name: value")."""
    return (len(f"{r.version} {r.status} {r.reason}") + 2 +
            sum(len(n) + 2 + len(v) + 2 for n, v in r.headers) + 2)


def read_head(sock):
    """A response head as it came first on `sock`, and the bytes after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise Closed(f"closed before a head: {data[:200]!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def body_of(sock, size):
    """The body of the next response on `sock`, known to be `size` bytes
    (read as fast as it can be: no parsing beyond the head's end)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise Closed(data[:200])
        data += chunk
    body = data.partition(b"\r\n\r\n")[2]
    while len(body) < size:
        chunk = sock.recv(65536)
        if not chunk:
            raise Closed(f"{len(body)} of {size} bytes")
        body += chunk
    return body


def split_responses(test, data, bodies):
    """Checks `data` is exactly the responses carrying `bodies` in order
    (200s framed by Content-Length)."""
    at = 0
    for i, body in enumerate(bodies):
        end = data.find(b"\r\n\r\n", at)
        test.assertGreater(end, -1, f"response {i}: no head in {data[at:at + 200]!r}")
        head = data[at:end].decode("latin-1")
        test.assertTrue(head.startswith("HTTP/1.1 200 "), f"response {i}: {head!r}")
        m = re.search(r"\r\nContent-Length: (\d+)", head)
        test.assertIsNotNone(m, head)
        test.assertEqual(int(m.group(1)), len(body))
        got = data[end + 4:end + 4 + len(body)]
        test.assertEqual(len(got), len(body), f"response {i} cut short")
        test.assertTrue(got == body, f"response {i}: other bytes")
        at = end + 4 + len(body)
    test.assertEqual(data[at:], b"", "bytes after the last response")


class UringBytes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.realpath(cls.tmp.name)
        cls.www = os.path.join(cls.dir, "www")
        os.mkdir(cls.www)
        cls.files = {}
        for size in SIZES + [MID]:
            cls.files[size] = os.urandom(size)
            with open(os.path.join(cls.www, f"s{size}.bin"), "wb") as f:
                f.write(cls.files[size])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def start(self, backend, threads=2, keep_alive="15s"):
        """weft on `backend` (WEFT_IO_BACKEND), checked by its start line and
        /server-status; skips when uring is refused here."""
        conf = CONF.replace("{threads}", str(threads)).replace("{keep_alive}", keep_alive)
        return start_on_backend(self, self.dir, conf, backend)

    def stop(self, weft):
        self.assertEqual(weft.stop(), 0, weft.stderr())

    def connect(self, weft, timeout=10.0, rcvbuf=None):
        c = Client.__new__(Client)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            # A small window, and small segments: weft's socket buffer is sized
            # from its segment size (~2.6 MB with loopback's 64 KiB), ~100 KB.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
        s.settimeout(timeout)
        s.connect(("127.0.0.1", weft.port))
        c.sock, c.timeout, c.buf, c.eof = s, timeout, b"", False
        self.addCleanup(c.close)
        return c

    def assertBody(self, r, body, what=""):
        self.assertEqual(r.status, 200, f"{what} {r}")
        self.assertEqual(r.header("content-length"), str(len(body)), what)
        self.assertTrue(r.body == body, f"{what}: {len(r.body)} bytes, not the file's")

    def assertParkedAnswers(self, c, path="/s13.bin"):
        """One request on `c`, answered, then a pause: the connection parks
        (on uring, with a receive armed)."""
        c.send(get(path))
        self.assertBody(c.response(), self.files[int(path[2:-4])], path)
        time.sleep(0.05)

    # 1 -------------------------------------------------------------------------
    def test_keep_alive_every_size_head_range_and_304(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                weft = self.start(backend)
                c = self.connect(weft)
                # Two files whose whole response (head and body) is exactly a
                # send slot, and one byte more.
                c.send(get(f"/s{SLOT - 1}.bin"))
                r = c.response()
                self.assertBody(r, self.files[SLOT - 1])
                head = head_length(r)
                files = dict(self.files)
                for name, total in (("exact", SLOT), ("over", SLOT + 1)):
                    files[name] = os.urandom(total - head)
                    with open(os.path.join(self.www, f"{name}.bin"), "wb") as f:
                        f.write(files[name])
                    c.send(get(f"/{name}.bin"))
                    r = c.response()
                    self.assertBody(r, files[name])
                    self.assertEqual(head_length(r) + len(r.body), total,
                                     "the response is not the size aimed at")
                keys = SIZES + ["exact", "over"]
                etags = {}
                for i in range(200):
                    key = keys[i % len(keys)]
                    kind = ("GET", "HEAD", "RANGE", "304")[(i // len(keys)) % 4]
                    path = f"/s{key}.bin" if isinstance(key, int) else f"/{key}.bin"
                    body = files[key]
                    what = f"request {i}: {kind} {path}"
                    if kind == "GET":
                        c.send(get(path))
                        r = c.response()
                        self.assertBody(r, body, what)
                        etags[key] = r.header("etag")
                    elif kind == "HEAD":
                        c.send(f"HEAD {path} HTTP/1.1\r\nHost: a\r\n\r\n")
                        r = c.response(head=True)
                        self.assertEqual(r.status, 200, what)
                        self.assertEqual(r.header("content-length"), str(len(body)), what)
                        self.assertEqual(r.header("etag"), etags[key], what)
                    elif kind == "RANGE" and len(body) == 0:
                        # No range of an empty file is satisfiable: ignored.
                        c.send(get(path, extra="Range: bytes=0-9\r\n"))
                        self.assertBody(c.response(), b"", what)
                    elif kind == "RANGE":
                        first = len(body) // 3
                        last = min(len(body) - 1, first + 6000)
                        c.send(get(path, extra=f"Range: bytes={first}-{last}\r\n"))
                        r = c.response()
                        self.assertEqual(r.status, 206, what)
                        self.assertEqual(r.header("content-range"),
                                         f"bytes {first}-{last}/{len(body)}", what)
                        self.assertTrue(r.body == body[first:last + 1], what)
                    else:
                        c.send(get(path, extra=f"If-None-Match: {etags[key]}\r\n"))
                        r = c.response()
                        self.assertEqual(r.status, 304, what)
                        self.assertEqual(r.header("etag"), etags[key], what)
                        self.assertIsNone(r.header("content-length"), what)
                self.assertTrue(c.open_after(0.1), "closed after 200 requests")
                self.stop(weft)

    # 2 -------------------------------------------------------------------------
    def test_fifty_pipelined_requests_in_one_write(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                weft = self.start(backend)
                c = self.connect(weft)
                self.assertParkedAnswers(c)
                asked = []
                batch = b""
                for i in range(50):
                    size = SIZES[(i * 7) % len(SIZES)]
                    head = i % 11 == 5
                    asked.append((size, head))
                    method = "HEAD" if head else "GET"
                    batch += f"{method} /s{size}.bin HTTP/1.1\r\nHost: a\r\n\r\n".encode()
                c.send(batch)
                for i, (size, head) in enumerate(asked):
                    r = c.response(head=head)
                    if head:
                        self.assertEqual((r.status, r.header("content-length")),
                                         (200, str(size)), f"response {i}")
                    else:
                        self.assertBody(r, self.files[size], f"response {i}")
                self.assertTrue(c.open_after(0.1))
                self.stop(weft)

    # 3 -------------------------------------------------------------------------
    def test_a_head_larger_than_a_receive_buffer_after_parking(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                weft = self.start(backend)
                c = self.connect(weft)
                for total in (4095, 4096, 4097, 6000, 8192, 12000, 16000):
                    self.assertParkedAnswers(c)
                    c.send(head_of(f"/s{MID}.bin", total))
                    self.assertBody(c.response(), self.files[MID], f"a {total} B head")
                # In two writes, the first filling a buffer exactly.
                self.assertParkedAnswers(c)
                request = head_of("/s4097.bin", 9000)
                c.send(request[:4096])
                time.sleep(0.1)
                c.send(request[4096:])
                self.assertBody(c.response(), self.files[4097], "a head in two writes")
                # A large head with a small request behind it, in one write.
                self.assertParkedAnswers(c)
                c.send(head_of("/s4095.bin", 7000) + get("/s13.bin").encode())
                self.assertBody(c.response(), self.files[4095], "a large head, pipelined")
                self.assertBody(c.response(), self.files[13], "behind a large head")
                self.assertTrue(c.open_after(0.1))
                self.stop(weft)

    # 4 -------------------------------------------------------------------------
    def test_a_request_and_its_fin_in_one_go(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                weft = self.start(backend)
                for size in (13, 4097, SLOT - 1, BIG):
                    for parked in (False, True):
                        what = f"{size} B, {'after a first request' if parked else 'first'}"
                        c = self.connect(weft)
                        if parked:
                            self.assertParkedAnswers(c)
                        c.sock.sendall(get(f"/s{size}.bin").encode())
                        c.sock.shutdown(socket.SHUT_WR)
                        self.assertBody(c.response(), self.files[size], what)
                        self.assertEqual(c.rest_until_close(5.0), b"", what)
                        c.close()
                # A head that does not parse: the 400, whole, then weft's FIN
                # (it half-closes after the answer, and reads what follows).
                for parked in (False, True):
                    c = self.connect(weft)
                    if parked:
                        self.assertParkedAnswers(c)
                    c.send(b"GET / HTTP/1.1\r\nHost: a\r\nBad Field\r\n\r\n")
                    r = c.response()
                    self.assertEqual(r.status, 400, r)
                    self.assertEqual(r.header("connection"), "close")
                    self.assertEqual(c.rest_until_close(5.0), b"")
                    c.close()
                # A FIN alone on a parked connection: closed at once.
                c = self.connect(weft)
                self.assertParkedAnswers(c)
                c.sock.shutdown(socket.SHUT_WR)
                self.assertEqual(c.rest_until_close(5.0), b"")
                self.stop(weft)

    # 5 -------------------------------------------------------------------------
    def idle_fds(self, weft):
        """weft's fd count once a connection served the 12 KiB file and
        closed (the files it opens for it stay cached)."""
        c = self.connect(weft)
        self.assertParkedAnswers(c, f"/s{MID}.bin")
        c.send(get(f"/s{MID}.bin", extra="Connection: close\r\n"))
        r = c.response()
        self.assertBody(r, self.files[MID])
        self.response_size = head_length(r) + MID - len("Connection: close\r\n")
        self.assertEqual(c.rest_until_close(5.0), b"")
        c.close()
        time.sleep(0.2)
        return fd_count(weft.process.pid)

    def test_a_client_that_does_not_read_gets_every_byte_and_no_fd_stays(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                weft = self.start(backend, threads=1, keep_alive="1s")
                idle = self.idle_fds(weft)
                body = self.files[MID]
                # 20 requests in one write, Connection: close on the last; the
                # client reads nothing for 1 s, then all of it.
                c = self.connect(weft, rcvbuf=4096)
                requests = [get(f"/s{MID}.bin") for _ in range(19)]
                requests.append(get(f"/s{MID}.bin", extra="Connection: close\r\n"))
                c.send("".join(requests))
                time.sleep(1.0)
                data, end = read_to_eof(c.sock, 10.0)
                self.assertEqual(end, "eof")
                split_responses(self, data, [body] * 20)
                c.close()
                # Requests one at a time until weft's socket takes no more of
                # an answer (its send stays in flight); the connection parks
                # and its keep-alive timeout (1 s) closes it with the send in
                # flight. The client reads 2 s later: every byte, then EOF.
                c = self.connect(weft, rcvbuf=4096)
                client_port = c.sock.getsockname()[1]
                sent = 0

                def took():
                    """What the kernel took of weft's answers: unread here, or
                    in weft's socket unacknowledged."""
                    return unread(c.sock) + (server_send_queue(weft.port, client_port) or 0)

                while sent < 30:
                    c.send(get(f"/s{MID}.bin"))
                    sent += 1
                    time.sleep(0.05)
                    if took() < sent * self.response_size:
                        # Not all of the last answer fit: waiting, or weft's
                        # socket buffer was growing?
                        before = took()
                        time.sleep(0.2)
                        if took() == before:
                            break
                self.assertLess(sent, 30, "the socket took every answer")
                self.assertLess(took(), sent * self.response_size)
                time.sleep(2.0)
                # Past the keep-alive timeout: on uring the connection parked
                # with its send in flight and was closed, its fd left to the
                # send (an orphan); on epoll the send still waits. Either way
                # the fd is open, for the bytes not sent yet.
                open_fds = fd_count(weft.process.pid)
                self.assertEqual(open_fds, idle + 1, fds(weft.process.pid))
                if backend == "uring":
                    status = json.loads(curl(weft.port, "/server-status?format=json").body)
                    self.assertEqual(status["connections"]["active"], 1,
                                     "the connection is still open: no orphan here")
                data, end = read_to_eof(c.sock, 10.0)
                self.assertEqual(end, "eof")
                split_responses(self, data, [body] * sent)
                c.close()
                self.assertTrue(wait_for(lambda: fd_count(weft.process.pid) == idle, 5.0),
                                f"{fds(weft.process.pid)}; {idle} fds when idle")
                self.stop(weft)

    # 6 -------------------------------------------------------------------------
    def test_more_parked_connections_than_receive_buffers_all_woken_at_once(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                # One loop: its 128 buffers cannot hold 300 receives.
                weft = self.start(backend, threads=1)
                clients = [self.connect(weft, timeout=20.0) for _ in range(300)]
                for c in clients:
                    c.send(get("/s13.bin"))
                for c in clients:
                    self.assertBody(c.response(), self.files[13])
                time.sleep(0.3)  # all parked, each with a receive armed
                os.kill(weft.process.pid, signal.SIGSTOP)
                try:
                    for i, c in enumerate(clients):
                        size = SIZES[i % len(SIZES)]
                        c.send(head_of(f"/s{size}.bin", 5000) if i % 10 == 3
                               else get(f"/s{size}.bin"))
                finally:
                    os.kill(weft.process.pid, signal.SIGCONT)
                for i, c in enumerate(clients):
                    size = SIZES[i % len(SIZES)]
                    self.assertBody(c.response(), self.files[size], f"connection {i}")
                # And again, now that buffers went back.
                for c in clients[::7]:
                    self.assertParkedAnswers(c, f"/s{SLOT}.bin")
                for c in clients:
                    c.close()
                self.stop(weft)

    # 7 -------------------------------------------------------------------------
    def test_websocket_and_event_stream_after_a_keep_alive_request(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                weft = self.start(backend)
                topic = f"/live/{backend}"
                for n in range(3):
                    self.publish(weft, topic, f"early {n}")
                # WebSocket: the 101 head first, then the three kept messages.
                c = self.connect(weft)
                self.assertParkedAnswers(c, f"/s{MID}.bin")
                c.send(f"GET {topic} HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                       "Sec-WebSocket-Version: 13\r\n\r\n")
                head, rest = read_head(c.sock)
                self.assertTrue(head.startswith(b"HTTP/1.1 101 "), head)
                self.assertIn(b"\r\nsec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo=\r\n",
                              head.lower())
                w = WebSocket.__new__(WebSocket)
                w.sock, w.buffer = c.sock, rest
                self.assertEqual([w.recv_data() for _ in range(3)],
                                 [b"early 0", b"early 1", b"early 2"])
                self.publish(weft, topic, "later")
                self.assertEqual(w.recv_frame(), (TEXT, b"later"))
                # An event stream: the 200 head first, then the kept events
                # after id 1.
                c = self.connect(weft)
                self.assertParkedAnswers(c, "/s4097.bin")
                c.send(f"GET {topic} HTTP/1.1\r\nHost: a\r\nAccept: text/event-stream\r\n"
                       f"Last-Event-ID: {self.first_id}\r\n\r\n")
                head, stream = read_head(c.sock)
                self.assertTrue(head.startswith(b"HTTP/1.1 200 "), head)
                self.assertIn(b"\r\ncontent-type: text/event-stream\r\n", head.lower())
                self.publish(weft, topic, "last")
                while b"data: last\n\n" not in stream:
                    chunk = c.sock.recv(65536)
                    self.assertTrue(chunk, f"the stream ended: {stream!r}")
                    stream += chunk
                data = [line[6:] for line in stream.decode().split("\n")
                        if line.startswith("data: ")]
                self.assertEqual(data, ["early 1", "early 2", "later", "last"])
                self.stop(weft)

    def publish(self, weft, topic, text):
        body = text.encode()
        with socket.create_connection(("127.0.0.1", weft.port), timeout=10) as s:
            s.sendall(f"POST {topic} HTTP/1.1\r\nHost: a\r\nContent-Length: {len(body)}\r\n"
                      "Connection: close\r\n\r\n".encode() + body)
            data, _ = read_to_eof(s, 10.0)
        self.assertTrue(data.startswith(b"HTTP/1.1 200 "), data[:200])
        answer = json.loads(data.partition(b"\r\n\r\n")[2])
        if text == "early 0":
            self.first_id = answer["id"]

    # 8 -------------------------------------------------------------------------
    def test_a_changed_file_is_what_the_next_request_on_the_connection_gets(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                weft = self.start(backend)
                # Kept in memory and sent through a slot; sent from the file;
                # kept in memory and sent by a syscall (on uring: the next
                # test, a known bug).
                for size in (1000, BIG) + ((40 * 1024,) if backend == "epoll" else ()):
                    path = os.path.join(self.www, f"changing-{backend}-{size}.bin")
                    url = f"/changing-{backend}-{size}.bin"
                    data = os.urandom(size)
                    with open(path, "wb") as f:
                        f.write(data)
                    c = self.connect(weft)
                    self.change_and_fetch(c, path, url, size, 50)
                    c.close()
                self.stop(weft)

    def change_and_fetch(self, c, path, url, size, count):
        """`count` times on `c`: GET, change the file (in place, the same
        size; or a new file renamed over it), GET at once: the new bytes."""
        with open(path, "rb") as f:
            data = f.read()
        for i in range(count):
            c.send(get(url))
            self.assertBody(c.response(), data, f"{size} B, before change {i}")
            before, data = data, os.urandom(size)
            if i % 2 == 0:
                with open(path, "r+b") as f:  # the same inode, same size
                    f.write(data)
            else:
                with open(path + ".new", "wb") as f:
                    f.write(data)
                os.rename(path + ".new", path)
            c.send(get(url))
            r = c.response()
            self.assertBody(r, data, f"{size} B, right after change {i} "
                                     f"({'rewritten' if i % 2 == 0 else 'renamed over'}; "
                                     f"{'the old bytes' if r.body == before else 'not the old'})")

    # Review 19c: a file kept in memory but larger than a send slot (16 KiB
    # < size <= 64 KiB) goes out by a syscall before the connection parks;
    # its RECV went in at the loop's next io_uring_enter. A client quick
    # enough changed the file and sent its next request before that enter:
    # the RECV completed inline at submission, its CQE ahead of the inotify
    # poll's (deferred task work), FsWatch::drain() skipped its read and the
    # old bytes went out in 5 to 10 % of the changes (15 of 15 runs failed on
    # c65fd2d). The RECV now polls first (IORING_RECVSEND_POLL_FIRST).
    def test_a_changed_file_sent_by_a_syscall_is_what_the_next_request_gets_on_uring(self):
        weft = self.start("uring")
        size = 40 * 1024
        path = os.path.join(self.www, "changing-syscall.bin")
        data = os.urandom(size)
        with open(path, "wb") as f:
            f.write(data)
        request = get("/changing-syscall.bin").encode()
        with socket.create_connection(("127.0.0.1", weft.port), timeout=10) as s:
            for i in range(3000):
                s.sendall(request)
                self.assertTrue(body_of(s, size) == data, f"before change {i}")
                before, data = data, os.urandom(size)
                with open(path, "r+b") as f:  # the same inode, same size
                    f.write(data)
                s.sendall(request)
                got = body_of(s, size)
                self.assertTrue(got == data, f"right after change {i}: "
                                             f"{'the old bytes' if got == before else 'others'}")
        self.stop(weft)

    # 9 -------------------------------------------------------------------------
    def test_sigterm_with_slow_downloads_under_way(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                weft = self.start(backend)
                body = self.files[BIG]
                results = [None] * 20
                started = threading.Barrier(21)

                def download(k):
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    s.settimeout(15)
                    try:
                        s.connect(("127.0.0.1", weft.port))
                        s.sendall(get(f"/s{BIG}.bin").encode())
                        data = s.recv(1024)
                        started.wait(10)
                        # 1 KiB each 2..60 ms: some end within the 2 s, some not.
                        pause = 0.002 + 0.003 * k
                        while True:
                            chunk = s.recv(1024)
                            if not chunk:
                                break
                            data += chunk
                            time.sleep(pause)
                        results[k] = data
                    except (OSError, threading.BrokenBarrierError) as e:
                        results[k] = e
                    finally:
                        s.close()

                # Five more hold sends of 12 KiB in flight, never reading.
                stuck = [self.connect(weft, rcvbuf=4096) for _ in range(5)]
                for c in stuck:
                    for _ in range(4):
                        c.send(get(f"/s{MID}.bin"))
                        time.sleep(0.02)
                threads = [threading.Thread(target=download, args=(k,)) for k in range(20)]
                for t in threads:
                    t.start()
                started.wait(10)
                time.sleep(0.3)
                stopped = time.monotonic()
                weft.terminate()
                self.assertEqual(weft.wait(timeout=8), 0, weft.stderr())
                took = time.monotonic() - stopped
                for t in threads:
                    t.join(30)
                whole = 0
                for k, data in enumerate(results):
                    self.assertIsInstance(data, bytes, f"client {k}: {data!r}")
                    head, sep, got = data.partition(b"\r\n\r\n")
                    self.assertTrue(sep and head.startswith(b"HTTP/1.1 200 "),
                                    f"client {k}: {data[:200]!r}")
                    self.assertIn(f"\r\nContent-Length: {BIG}\r\n".encode(), head + b"\r\n")
                    self.assertLessEqual(len(got), BIG, f"client {k}: bytes past the body")
                    self.assertTrue(got == body[:len(got)], f"client {k}: other bytes")
                    whole += len(got) == BIG
                # Bounds, not measurements: shutdown_timeout is 2 s.
                self.assertLess(took, 6.0, "weft outlived its shutdown_timeout")
                self.assertGreater(whole, 0, "no download finished in the 2 s")
                for c in stuck:
                    data, _ = read_to_eof(c.sock, 10.0)
                    self.assertTrue(data.startswith(b"HTTP/1.1 200 "), data[:100])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
