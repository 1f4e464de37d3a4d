#!/usr/bin/env python3
"""Slow clients must not hold PHP workers: weft reads a request body whole
before it takes a backend connection, and spools a response PHP writes
faster than its client reads (memory, then a temp file), giving the worker
back at the end of the script. With request_buffering = off, X-Accel-Buffering:
no or an event stream, bytes still go straight through.

Against a real php-fpm8.2 pool of 4 children: what a few slow clients did
to it before is that every worker waited on them, and a normal request
waited queue_timeout (60 s here) in line.

    test_php_slow_clients.py WEFT_BINARY
"""
import hashlib
import os
import socket
import sys
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Client, get  # noqa: E402
from php_support import PhpTestCase, install_fixtures  # noqa: E402

# Answered promptly: the bound a normal request must meet while the slow
# clients hold on (queue_timeout is 60 s, so a worker they held shows).
PROMPT = 5.0
WORKERS = 4

SCRIPTS = {
    "ok.php": b'<?php echo "ok";\n',
    # Touches started-ID first (before it reads the body, which it may do
    # while the body still arrives when request_buffering is off).
    "body.php": b"""<?php
$id = preg_replace('/[^a-z0-9-]/', '', $_GET['id'] ?? '');
if ($id !== '') touch(getenv('MARK_DIR') . "/started-$id");
$body = file_get_contents('php://input');
echo $_SERVER['CONTENT_LENGTH'] ?? 'none', ' ', strlen($body), ' ', md5($body);
""",
    # N bytes that never repeat (md5 of 0, 1, 2, ... in hex), then done-ID.
    "sized.php": b"""<?php
$id = preg_replace('/[^a-z0-9-]/', '', $_GET['id'] ?? '');
$n = (int)($_GET['n'] ?? 0);
for ($i = 0; $i * 32 < $n; $i++) echo substr(md5((string)$i), 0, min(32, $n - $i * 32));
if ($id !== '') touch(getenv('MARK_DIR') . "/done-$id");
""",
    # "first", flushed; "second" once the test says go; then done-ID. The
    # query's h adds a head field.
    "flush.php": b"""<?php
$id = preg_replace('/[^a-z0-9-]/', '', $_GET['id'] ?? '');
$dir = getenv('MARK_DIR');
if (($_GET['h'] ?? '') === 'accel') header('X-Accel-Buffering: no');
if (($_GET['h'] ?? '') === 'events') header('Content-Type: text/event-stream');
while (ob_get_level()) ob_end_flush();
echo "first\\n";
flush();
for ($i = 0; $i < 1000 && !file_exists("$dir/release-$id"); $i++) usleep(10000);
echo "second\\n";
touch("$dir/done-$id");
""",
}


def sized(n):
    out = b"".join(hashlib.md5(str(i).encode()).hexdigest().encode()
                   for i in range((n + 31) // 32))
    return out[:n]


CONF = """\
threads = 2
request_timeout = 5s
body_timeout = 60s
send_timeout = 60s
max_request_body = 16M
listener 127.0.0.1:{port}
upstream php {
    server = unix:{dir}/php/php.sock
    keepalive = 4
    max_conns = 4
    connect_timeout = 2s
    read_timeout = 60s
    queue_timeout = 60s
}
site {
    root = {dir}/www
    fastcgi /off {
        upstream = php
        request_buffering = off
    }
    fastcgi /small {
        upstream = php
        buffers = 16K
        max_temp_file_size = 256K
    }
    fastcgi / {
        upstream = php
    }
}
"""


def slow_reader(port, timeout=30.0):
    """A client whose socket takes little: a 4 KiB receive buffer, set
    before the connection so the window stays small."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    c = Client.__new__(Client)
    c.sock, c.timeout, c.buf, c.eof = s, timeout, b"", False
    return c


def temp_files(pid):
    """The unlinked temp files (O_TMPFILE) process `pid` holds open."""
    fds = os.path.join("/proc", str(pid), "fd")
    names = []
    for fd in os.listdir(fds):
        try:
            names.append(os.readlink(os.path.join(fds, fd)))
        except FileNotFoundError:
            pass
    return [n for n in names if n.endswith("(deleted)") and "/#" in n]


def wait_no_temp_files(test, pid, timeout=10.0):
    deadline = time.monotonic() + timeout
    while temp_files(pid):
        if time.monotonic() > deadline:
            test.fail(f"weft still holds temp files: {temp_files(pid)}")
        time.sleep(0.05)


class SlowClientTest(PhpTestCase):
    CONF = CONF
    POOLS = {"php": WORKERS}
    # php://input readable while the body still arrives (request_buffering off).
    POOL_ADMIN = {"enable_post_data_reading": "0"}

    @classmethod
    def setUpDir(cls, dir):
        www = os.path.join(dir, "www")
        layout = {}
        for name, source in SCRIPTS.items():
            for sub in ("", "off/", "small/"):
                layout[sub + name] = source
        install_fixtures(www, layout)

    def prompt_get(self, path="/ok.php"):
        """A normal request, answered within PROMPT seconds."""
        c = Client(self.port, PROMPT)
        self.addCleanup(c.close)
        c.send(get(path))
        r = c.response()
        self.assertEqual((r.status, r.body), (200, b"ok"), r)

    def test_slow_request_bodies_hold_no_worker(self):
        length = 200
        clients = []
        for i in range(2 * WORKERS):
            c = self.connect(timeout=30.0)
            c.send(f"POST /body.php HTTP/1.1\r\nHost: a\r\nContent-Length: {length}\r\n"
                   "Content-Type: application/octet-stream\r\n\r\n")
            clients.append(c)
        # A byte a second for a few seconds, then they hold.
        for second in range(3):
            for c in clients:
                c.send(b"x")
            time.sleep(1.0)
        self.prompt_get()
        for i, c in enumerate(clients):
            c.send(bytes([65 + i]) * (length - 3))
        for i, c in enumerate(clients):
            r = c.response()
            data = b"xxx" + bytes([65 + i]) * (length - 3)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.body.decode(),
                             f"{length} {length} {hashlib.md5(data).hexdigest()}")

    def test_chunked_and_large_bodies_arrive_whole(self):
        data = os.urandom(300 * 1024)  # past the memory part: through the temp file
        for framing in ("length", "chunked"):
            c = self.connect()
            if framing == "length":
                c.send(f"POST /body.php HTTP/1.1\r\nHost: a\r\nContent-Length: {len(data)}\r\n"
                       "Content-Type: application/octet-stream\r\n\r\n".encode() + data)
            else:
                head = ("POST /body.php HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                        "Content-Type: application/octet-stream\r\n\r\n").encode()
                chunks = b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + 7000]), data[i:i + 7000])
                                  for i in range(0, len(data), 7000))
                c.send(head + chunks + b"0\r\n\r\n")
            r = c.response()
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.body.decode(),
                             f"{len(data)} {len(data)} {hashlib.md5(data).hexdigest()}", framing)

    def test_slow_readers_hold_no_worker_and_get_every_byte(self):
        size = 4 << 20
        ids = [uuid.uuid4().hex[:12] for _ in range(6)]
        clients = []
        for id in ids:
            c = slow_reader(self.port)
            self.addCleanup(c.close)
            c.send(get(f"/sized.php?n={size}&id={id}"))
            clients.append(c)
        # Every script ran to its end though nobody read: the workers are free.
        for id in ids:
            self.marks.wait("done", id, timeout=30.0)
        self.prompt_get()
        expected = hashlib.md5(sized(size)).hexdigest()
        for c in clients:
            r = c.response()
            self.assertEqual(r.status, 200, r)
            self.assertEqual(len(r.body), size)
            self.assertEqual(hashlib.md5(r.body).hexdigest(), expected)

    def test_small_pipelined_responses_to_clients_that_do_not_read(self):
        # Each response fits one read with its END_REQUEST (the one-send
        # path); what the socket does not take is spooled there too.
        size, count = 20000, 200
        clients = []
        for n in range(6):
            c = slow_reader(self.port)
            self.addCleanup(c.close)
            c.send("".join(get(f"/sized.php?n={size}") for _ in range(count)))
            clients.append(c)
        time.sleep(1.0)  # they fill their sockets
        self.prompt_get()
        expected = sized(size)
        for c in clients:
            for _ in range(count):
                r = c.response()
                self.assertEqual((r.status, r.body == expected), (200, True), r)

    def test_past_the_temp_file_maximum_php_waits_and_every_byte_arrives(self):
        size = 3 << 20  # past buffers = 16K + max_temp_file_size = 256K
        id = uuid.uuid4().hex[:12]
        c = slow_reader(self.port)
        self.addCleanup(c.close)
        c.send(get(f"/small/sized.php?n={size}&id={id}"))
        r = c.response()
        self.assertEqual(r.status, 200, r)
        self.assertEqual(hashlib.md5(r.body).hexdigest(), hashlib.md5(sized(size)).hexdigest())
        self.marks.wait("done", id)

    def test_a_client_that_hangs_up_while_the_spool_drains(self):
        id = uuid.uuid4().hex[:12]
        c = slow_reader(self.port)
        c.send(get(f"/sized.php?n={4 << 20}&id={id}"))
        self.marks.wait("done", id, timeout=30.0)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        self.assertTrue(temp_files(self.weft.process.pid), "no temp file for 4 MiB unread")
        c.close()  # a reset
        self.prompt_get()
        wait_no_temp_files(self, self.weft.process.pid)

    def test_request_buffering_off_streams_the_body(self):
        id = uuid.uuid4().hex[:12]
        data = os.urandom(200 * 1024)
        c = self.connect()
        c.send(f"POST /off/body.php?id={id} HTTP/1.1\r\nHost: a\r\n"
               f"Content-Length: {len(data)}\r\nContent-Type: application/octet-stream\r\n\r\n"
               .encode() + data[:64 * 1024])
        # PHP runs while most of the body is still to come (weft passes it
        # on in records of up to 16 KiB).
        self.marks.wait("started", id)
        c.send(data[64 * 1024:])
        r = c.response()
        self.assertEqual(r.body.decode(),
                         f"{len(data)} {len(data)} {hashlib.md5(data).hexdigest()}")

    def test_buffered_request_body_reaches_php_whole(self):
        id = uuid.uuid4().hex[:12]
        data = os.urandom(200 * 1024)
        c = self.connect()
        c.send(f"POST /body.php?id={id} HTTP/1.1\r\nHost: a\r\n"
               f"Content-Length: {len(data)}\r\nContent-Type: application/octet-stream\r\n\r\n"
               .encode() + data[:64 * 1024])
        # A normal request goes through meanwhile; then a moment in which a
        # streamed body (flushed in 16 KiB records) would have started PHP.
        self.prompt_get()
        time.sleep(1.0)
        self.assertFalse(self.marks.exists("started", id), "PHP ran before the body was in")
        c.send(data[64 * 1024:])
        r = c.response()
        self.assertEqual(r.body.decode(),
                         f"{len(data)} {len(data)} {hashlib.md5(data).hexdigest()}")
        self.assertTrue(self.marks.exists("started", id))

    def flushes_before_the_end(self, query):
        id = uuid.uuid4().hex[:12]
        c = self.connect()
        c.send(get(f"/flush.php?id={id}{query}"))
        while b"first\n" not in c.buf:
            c._fill()
        self.assertFalse(self.marks.exists("done", id), "the script ended before 'first' came")
        self.marks.release(id)
        r = c.response()
        self.assertEqual((r.status, r.body), (200, b"first\nsecond\n"), r)

    def test_flush_reaches_a_reading_client_before_the_script_ends(self):
        for query in ("", "&h=accel", "&h=events"):
            with self.subTest(query=query):
                self.flushes_before_the_end(query)

    def test_x_accel_buffering_no_is_relayed_with_backpressure(self):
        # Unbuffered: a client that does not read holds PHP at its write,
        # so the script cannot end before the client has read.
        size = 8 << 20
        id = uuid.uuid4().hex[:12]
        script = b"""<?php
header('X-Accel-Buffering: no');
$n = (int)$_GET['n'];
for ($i = 0; $i * 32 < $n; $i++) echo md5((string)$i);
touch(getenv('MARK_DIR') . "/done-" . $_GET['id']);
"""
        install_fixtures(os.path.join(self.dir, "www"), {"accel.php": script})
        c = slow_reader(self.port)
        self.addCleanup(c.close)
        c.send(get(f"/accel.php?n={size}&id={id}"))
        while b"\r\n\r\n" not in c.buf:
            c._fill()
        # A moment in which a buffered relay would have let the script end.
        time.sleep(2.0)
        self.assertFalse(self.marks.exists("done", id), "the script ended with nothing read")
        r = c.response()
        self.assertEqual(hashlib.md5(r.body).hexdigest(), hashlib.md5(sized(size)).hexdigest())
        self.marks.wait("done", id)


class ResetMidAnswerTest(PhpTestCase):
    """Clients that reset while weft relays a large answer to them, two at a
    time, on one loop. On uring, the relay's writer woken by the hang-up
    found its ring send still in flight, took the socket for full and waited
    again, a wait the hang-up ended at once: the loop spun in that coroutine
    and served nothing more."""

    CONF = CONF.replace("threads = 2", "threads = 1")
    POOLS = {"php": WORKERS}

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), {name: SCRIPTS[name]
                                                    for name in ("ok.php", "sized.php")})

    def test_clients_that_reset_mid_answer_leave_the_loop_serving(self):
        for round in range(30):
            clients = [Client(self.port, PROMPT) for _ in range(2)]
            for c in clients:
                c.send(get(f"/sized.php?n={4 << 20}"))
            time.sleep((round % 10) * 0.003)
            for c in clients:
                c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                  b"\x01\x00\x00\x00\x00\x00\x00\x00")
                c.close()  # a reset
            if round % 5 == 4:
                c = Client(self.port, PROMPT)
                self.addCleanup(c.close)
                c.send(get("/ok.php"))
                r = c.response()
                self.assertEqual((r.status, r.body), (200, b"ok"), f"round {round}")


class SendTimeoutTest(PhpTestCase):
    CONF = CONF.replace("send_timeout = 60s", "send_timeout = 1s")
    POOLS = {"php": 2}

    @classmethod
    def setUpDir(cls, dir):
        install_fixtures(os.path.join(dir, "www"), SCRIPTS)

    def test_a_client_that_takes_nothing_for_send_timeout_is_dropped(self):
        size = 4 << 20
        id = uuid.uuid4().hex[:12]
        c = slow_reader(self.port, timeout=10.0)
        self.addCleanup(c.close)
        c.send(get(f"/sized.php?n={size}&id={id}"))
        self.marks.wait("done", id, timeout=30.0)
        time.sleep(3.0)  # past send_timeout with the spool full
        got = 0
        while True:
            try:
                chunk = c.sock.recv(1 << 20)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += len(chunk)
        self.assertLess(got, size, "the whole response came though the client took nothing")
        self.assertIn("send_timeout", self.weft.stderr())
        wait_no_temp_files(self, self.weft.process.pid)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
