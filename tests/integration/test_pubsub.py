#!/usr/bin/env python3
"""The pubsub handler on a real weft with two loops, through hand-built
WebSocket and event-stream clients (websocket_support.py) and POSTs:
every subscriber on both loops gets each message once and in order; SSE
with ids, history and Last-Event-ID; a subscriber that never reads is
closed with 1008 (the access log says why) while another gets everything;
who may publish; the handshake's and the route's refusals (426, 400, 406,
404, 405, 413); client publishing (a chat); pings and the close handshake;
a reload keeps subscribers; SIGTERM closes them with 1001.

    test_pubsub.py WEFT_BINARY
"""
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import (ServerTestCase, Weft, connect_from, read,  # noqa: E402
                          read_until_close, wait_for)
from websocket_support import (BINARY, CLOSE, PING, PONG, TEXT, EventStream,  # noqa: E402
                               WebSocket, accept_for, close_code)

CONF = """\
threads = 2
listener 127.0.0.1:{port}
access_log = {dir}/access.log
site {
    pubsub /live {
        history = 3
    }
    pubsub /chat {
        clients_publish = on
        max_message = 100
        subprotocols = chat.v2 chat
    }
    pubsub /small {
        max_message = 64K
        max_queued = 1M
    }
    pubsub /secure {
        publish_token = sekret
    }
    pubsub /from {
        publish_from = 127.0.0.2
    }
}
"""


def post(port, path, body, headers=(), source=None):
    """POSTs `body` (bytes) on a new connection, from `source` if given;
    (status, headers, body as text)."""
    s = (connect_from(port, source) if source
         else socket.create_connection(("127.0.0.1", port), timeout=10))
    with s:
        head = [f"POST {path} HTTP/1.1", "Host: a", f"Content-Length: {len(body)}",
                "Connection: close", *headers]
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        return read_until_close(s)


def publish(port, topic, body):
    status, _, answer = post(port, topic, body if isinstance(body, bytes) else body.encode())
    if status != 200:
        raise AssertionError(f"POST {topic}: {status} {answer!r}")
    return json.loads(answer)


def request(port, text):
    """Sends a raw request that closes its connection; status and fields."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(text.encode())
        status, fields, _ = read_until_close(s)
    return status, fields


class PubsubTest(ServerTestCase):
    CONF = CONF

    def ws(self, path, **kw):
        w = WebSocket(self.port, path, **kw)
        self.addCleanup(w.close_socket)
        return w

    def sse(self, path, **kw):
        e = EventStream(self.port, path, **kw)
        self.addCleanup(e.close_socket)
        return e

    def test_every_subscriber_on_both_loops_gets_each_message_once_in_order(self):
        sockets = [self.ws("/live/fan") for _ in range(8)]
        streams = [self.sse("/live/fan") for _ in range(4)]
        for w in sockets:
            self.assertEqual(w.status, 101)
            self.assertEqual(w.headers["sec-websocket-accept"], accept_for(w.key))
            self.assertNotIn("sec-websocket-extensions", w.headers)
        for e in streams:
            self.assertEqual(e.status, 200)
        bodies = [f"message {i}" for i in range(30)]
        ids = []
        for body in bodies:
            answer = publish(self.port, "/live/fan", body)
            self.assertEqual(answer["subscribers"], 12)
            ids.append(answer["id"])
        self.assertEqual(ids, sorted(set(ids)))
        for w in sockets:
            got = [w.recv_data().decode() for _ in bodies]
            self.assertEqual(got, bodies)
        for e in streams:
            events = [e.next_event() for _ in bodies]
            self.assertEqual([ev["data"] for ev in events], bodies)
            self.assertEqual([int(ev["id"]) for ev in events], ids)
        # Nothing more: once, not twice.
        publish(self.port, "/live/fan", "end")
        for w in sockets:
            self.assertEqual(w.recv_data(), b"end")
        # Both loops served them (the status counters would say; the
        # connections spread over two SO_REUSEPORT sockets).

    def test_sse_head_lines_and_binary(self):
        e = self.sse("/live/sse")
        self.assertEqual(e.status, 200)
        self.assertEqual(e.headers["content-type"], "text/event-stream")
        self.assertEqual(e.headers["cache-control"], "no-cache")
        self.assertEqual(e.headers["x-accel-buffering"], "no")
        self.assertEqual(e.headers.get("connection"), "close")
        self.assertNotIn("content-length", e.headers)
        self.assertNotIn("transfer-encoding", e.headers)
        w = self.ws("/live/sse")
        publish(self.port, "/live/sse", "one\ntwo\r\nthree")
        self.assertEqual(e.next_event()["data"], "one\ntwo\nthree")
        self.assertEqual(w.recv_frame(), (TEXT, b"one\ntwo\r\nthree"))
        post(self.port, "/live/sse", b"\xff\xfe")
        self.assertEqual(w.recv_frame(), (BINARY, b"\xff\xfe"))

    def test_history_for_late_joiners_and_last_event_id(self):
        ids = [publish(self.port, "/live/hist", f"h{i}")["id"] for i in range(5)]
        w = self.ws("/live/hist")
        self.assertEqual([w.recv_data() for _ in range(3)], [b"h2", b"h3", b"h4"])
        e = self.sse("/live/hist", last_event_id=ids[3])
        event = e.next_event()
        self.assertEqual((int(event["id"]), event["data"]), (ids[4], "h4"))
        publish(self.port, "/live/hist", "h5")
        self.assertEqual(e.next_event()["data"], "h5")
        self.assertEqual(w.recv_data(), b"h5")

    def test_a_subscriber_that_never_reads_is_closed_with_1008_others_get_all(self):
        stuck = self.ws("/small/q")
        stuck.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        fast = self.ws("/small/q")
        body = b"x" * (60 << 10)
        count = 150  # 9 MB: more than the kernel's buffers and the queue hold for it
        got = []
        reader = threading.Thread(target=lambda: got.extend(
            len(fast.recv_data(timeout=30)) for _ in range(count)))
        reader.start()
        for _ in range(count):
            status, _, answer = post(self.port, "/small/q", body)
            self.assertEqual(status, 200, answer)
        reader.join(60)
        self.assertEqual(got, [len(body)] * count)
        # The stuck one was closed (its close frame waits behind what its
        # tiny window holds: reading it all would take long), and the
        # access log says why.
        self.assertTrue(wait_for(lambda: "ws 1008 send queue full"
                                 in read(os.path.join(self.dir, "access.log"))))

    def test_who_may_publish(self):
        status, fields, _ = post(self.port, "/secure/t", b"x")
        self.assertEqual(status, 401)
        self.assertEqual(fields["www-authenticate"], "Bearer")
        status, _, _ = post(self.port, "/secure/t", b"x", ["Authorization: Bearer wrong"])
        self.assertEqual(status, 401)
        status, _, body = post(self.port, "/secure/t", b"x", ["Authorization: Bearer sekret"])
        self.assertEqual(status, 200, body)
        status, _, _ = post(self.port, "/from/t", b"x")
        self.assertEqual(status, 403)
        status, _, body = post(self.port, "/from/t", b"x", source="127.0.0.2")
        self.assertEqual(status, 200, body)
        # Neither set: loopback only, and this is loopback.
        status, _, _ = post(self.port, "/live/t", b"x", source="127.0.0.2")
        self.assertEqual(status, 200)

    def test_refusals(self):
        w = self.ws("/live/t", version="12")
        self.assertEqual(w.status, 426)
        self.assertEqual(w.headers["sec-websocket-version"], "13")
        self.assertEqual(self.ws("/live/t", key="short").status, 400)
        status, _ = request(self.port, "GET /live/t HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        self.assertEqual(status, 406)
        for path in ("/live/a%20b", "/live/", "/live/a%25", "/live/" + "x" * 201):
            status, _ = request(self.port, f"GET {path} HTTP/1.1\r\nHost: a\r\n"
                                           "Accept: text/event-stream\r\nConnection: close\r\n\r\n")
            self.assertEqual(status, 404, path)
        for method in ("PUT", "HEAD", "DELETE"):
            status, fields = request(self.port, f"{method} /live/t HTTP/1.1\r\nHost: a\r\n"
                                                "Connection: close\r\n\r\n")
            self.assertEqual(status, 405, method)
            self.assertEqual(fields["allow"], "GET, POST")
        status, _, _ = post(self.port, "/chat/t", b"y" * 101)
        self.assertEqual(status, 413)

    def test_chat_clients_publish_and_subprotocol(self):
        a = self.ws("/chat/room", headers=["Sec-WebSocket-Protocol: chat, chat.v2"])
        self.assertEqual(a.headers["sec-websocket-protocol"], "chat.v2")
        b = self.ws("/chat/room")
        self.assertNotIn("sec-websocket-protocol", b.headers)
        e = self.sse("/chat/room")
        a.send_text("hello from a")
        self.assertEqual(b.recv_data(), b"hello from a")
        self.assertEqual(a.recv_data(), b"hello from a")
        self.assertEqual(e.next_event()["data"], "hello from a")
        # Fragmented, a ping between the fragments.
        b.send_frame(TEXT, "frag", fin=False)
        b.send_frame(PING, "p")
        self.assertEqual(b.recv_frame(), (PONG, b"p"))
        b.send_frame(0, "mented")
        self.assertEqual(a.recv_data(), b"fragmented")
        # Too big: 1009.
        a.send_text("z" * 101)
        self.assertEqual(a.recv_close(), 1009)
        # On a route without clients_publish: 1008.
        c = self.ws("/live/room")
        c.send_text("may I?")
        self.assertEqual(c.recv_close(), 1008)

    def test_ping_pong_and_close_handshake(self):
        w = self.ws("/live/pp")
        w.send_frame(PING, "abc")
        self.assertEqual(w.recv_frame(), (PONG, b"abc"))
        w.send_close(4000, b"bye")
        opcode, payload = w.recv_frame()
        self.assertEqual((opcode, close_code(payload)), (CLOSE, 4000))
        self.assertTrue(w.closed_by_server())
        self.assertTrue(wait_for(lambda: "ws 4000 closed by client"
                                 in read(os.path.join(self.dir, "access.log"))))
        # A protocol error (an unmasked frame): 1002.
        v = self.ws("/live/pp")
        v.send_frame(TEXT, "x", mask=False)
        self.assertEqual(v.recv_close(), 1002)


class StopAndReloadTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = os.path.realpath(self.tmp.name)
        conf = CONF.replace("history = 3", "history = 1").replace(
            "site {\n", "site {\n    pubsub /pinged {\n        ping = 1s\n    }\n")
        self.weft = Weft(self.dir, conf)
        self.addCleanup(self.weft.kill)

    def test_reload_keeps_subscribers_and_sigterm_closes_them_with_1001(self):
        port = self.weft.port
        sockets = [WebSocket(port, "/live/r") for _ in range(4)]
        stream = EventStream(port, "/live/r")
        publish(port, "/live/r", "before")
        for w in sockets:
            self.assertEqual(w.recv_data(), b"before")
        # A reload with a changed setting: subscribers stay, and keep receiving.
        with open(self.weft.conf_path) as f:
            text = f.read()
        with open(self.weft.conf_path, "w") as f:
            f.write(text.replace("history = 1", "history = 2"))
        before = self.weft.stderr().count("reloaded")
        self.weft.process.send_signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: self.weft.stderr().count("reloaded") > before, 15),
                        self.weft.stderr())
        publish(port, "/live/r", "after")
        for w in sockets:
            self.assertEqual(w.recv_data(), b"after")
        self.assertEqual(stream.next_event()["data"], "before")
        self.assertEqual(stream.next_event()["data"], "after")
        # SIGTERM: 1001 to each, which answers, and weft exits 0.
        self.weft.terminate()
        for w in sockets:
            self.assertEqual(w.recv_close(timeout=10), 1001)
            w.send_close(1001)
        self.assertEqual(self.weft.wait(), 0)
        for w in sockets:
            w.close_socket()
        stream.close_socket()

    def test_pings_and_a_silent_client_closed_after_two(self):
        silent = WebSocket(self.weft.port, "/pinged/p")
        talker = WebSocket(self.weft.port, "/pinged/p")
        try:
            # The talker answers each ping with a pong and stays.
            deadline = time.monotonic() + 4
            pings = 0
            while time.monotonic() < deadline:
                try:
                    opcode, payload = talker.recv_frame(timeout=deadline - time.monotonic())
                except OSError:
                    break
                self.assertEqual(opcode, PING)
                pings += 1
                talker.send_frame(PONG, payload)
            self.assertGreaterEqual(pings, 2)
            frames = []
            while True:
                opcode, payload = silent.recv_frame(timeout=10)
                frames.append(opcode)
                if opcode == CLOSE:
                    break
            self.assertEqual(close_code(payload), 1001)
            self.assertIn(PING, frames)
            talker.send_frame(PING, "still here")
            # The server's own pings go on meanwhile: one may come first.
            frame = talker.recv_frame()
            while frame[0] == PING:
                talker.send_frame(PONG, frame[1])
                frame = talker.recv_frame()
            self.assertEqual(frame, (PONG, b"still here"))
        finally:
            silent.close_socket()
            talker.close_socket()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
