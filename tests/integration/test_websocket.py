#!/usr/bin/env python3
"""RFC 6455 against the weft binary's pubsub handler (threads = 2), with two
kinds of client: Node's `ws` package (npm, through websocket_clients.js) for
what a real library does, and a raw client built here for what no
well-behaved library sends (unmasked frames, RSV bits, unknown opcodes,
broken UTF-8, bad close codes, ...). Each failure must draw the close code
the RFC requires, and then the server ends TCP.

`ws` is installed by npm (from the npm cache when it has it) into
BUILD_DIR/npm-ws; only its tests are skipped, saying why, when it cannot be.

    test_websocket.py WEFT_BINARY BUILD_DIR
"""
import base64
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Weft, node_json, npm_package, read, wait_for  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WS_PACKAGE = "ws@8.23.0"  # works with Node 18 (Debian 12's) and later

PING_MS = 1000  # the smallest ping the configuration takes
MAX_MESSAGE = 64 << 10
CONF = f"""\
threads = 2
listener 127.0.0.1:{{port}}
access_log = {{dir}}/access.log
site {{
    pubsub /live {{
        clients_publish = on
        max_message = 64k
        max_queued = 64k
        ping = 30s
        subprotocols = chat superchat
    }}
    pubsub /ping {{
        ping = {PING_MS // 1000}s
    }}
    pubsub /feed {{
    }}
    status /server-status {{
        allow_from = 127.0.0.1
        deny_from = all
    }}
}}
"""

# Opcodes.
CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
KEY = "dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455 §1.3's example
KEY_ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def accept_value(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def mask(payload, key):
    n = len(payload)
    if not n:
        return b""
    stream = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(stream, "big")).to_bytes(n, "big")


def frame(opcode, payload=b"", fin=True, rsv=0, masked=True, length=None, form=None):
    """One client frame. `length` announces another length than the payload's
    (the payload is not sent then unless given); `form` forces the 7-, 16- or
    64-bit length form (7, 16, 64)."""
    if isinstance(payload, str):
        payload = payload.encode()
    n = len(payload) if length is None else length
    form = form or (7 if n < 126 else 16 if n < 65536 else 64)
    head = bytes([(0x80 if fin else 0) | rsv << 4 | opcode])
    bit = 0x80 if masked else 0
    if form == 7:
        head += bytes([bit | n])
    elif form == 16:
        head += bytes([bit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([bit | 127]) + struct.pack(">Q", n)
    if not masked:
        return head + payload
    key = os.urandom(4)
    return head + key + mask(payload, key)


def close_payload(code, reason=b""):
    return struct.pack(">H", code) + reason


def upgrade_request(path, key=KEY, version="13", protocols=None, extra="", http="HTTP/1.1",
                    upgrade="websocket", connection="Upgrade"):
    lines = [f"GET {path} {http}", "Host: 127.0.0.1"]
    if upgrade is not None:
        lines.append(f"Upgrade: {upgrade}")
    if connection is not None:
        lines.append(f"Connection: {connection}")
    if key is not None:
        lines.append(f"Sec-WebSocket-Key: {key}")
    if version is not None:
        lines.append(f"Sec-WebSocket-Version: {version}")
    if protocols:
        lines.append(f"Sec-WebSocket-Protocol: {protocols}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


class Closed(Exception):
    pass


class RawClient:
    """A WebSocket client over a plain socket that sends whatever it is told
    and reads the server's frames exactly (asserting they are unmasked)."""

    def __init__(self, port, rcvbuf=None, timeout=5.0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        self.buf = b""
        self.status = None
        self.headers = {}

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise Closed("the server closed the connection")
        self.buf += data

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def head(self):
        """The response head: status and headers (lower-case names, values
        of repeated fields joined by ', ')."""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split(" ")[1])
        self.headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            value = value.strip()
            self.headers[name] = f"{self.headers[name]}, {value}" if name in self.headers else value
        return self.status

    def handshake(self, path, first_frames=b"", **kw):
        self.send(upgrade_request(path, **kw) + first_frames)
        return self.head()

    def read_frame(self):
        """(fin, rsv, opcode, payload) of the server's next frame."""
        b0, b1 = self._take(2)
        if b1 & 0x80:
            raise AssertionError("the server masked a frame")
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._take(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._take(8))[0]
        return bool(b0 & 0x80), b0 >> 4 & 7, b0 & 0xF, self._take(n)

    def message(self, answer_pings=True):
        """The next message ("text"/"binary", bytes), ("close", code, reason)
        ((None, b"") for an empty close), or ("pong", payload); pings are
        answered (or counted in self.pings) on the way."""
        kind, parts = None, []
        while True:
            fin, rsv, opcode, payload = self.read_frame()
            if rsv:
                raise AssertionError(f"the server set RSV bits {rsv}")
            if opcode == PING:
                self.pings = getattr(self, "pings", 0) + 1
                if answer_pings:
                    self.send(frame(PONG, payload))
                continue
            if opcode == PONG:
                return ("pong", payload)
            if opcode == CLOSE:
                if not payload:
                    return ("close", None, b"")
                return ("close", struct.unpack(">H", payload[:2])[0], payload[2:])
            if opcode in (TEXT, BINARY):
                if kind is not None:
                    raise AssertionError("the server began a message inside another")
                kind = "text" if opcode == TEXT else "binary"
            elif opcode != CONT or kind is None:
                raise AssertionError(f"the server sent opcode {opcode}")
            parts.append(payload)
            if fin:
                return (kind, b"".join(parts))

    def sync(self):
        """A ping answered: the session runs (subscribed) on its loop."""
        self.send(frame(PING, b"sync"))
        while True:
            m = self.message()
            if m == ("pong", b"sync"):
                return
            if m[0] == "close":
                raise AssertionError(f"closed while waiting for a pong: {m}")

    def ends(self, timeout=5.0):
        """How the TCP connection ends within `timeout` with nothing more
        received: "eof", "reset", "data" (bytes came), or "open"."""
        self.sock.settimeout(timeout)
        try:
            data = self.buf or self.sock.recv(65536)
        except ConnectionResetError:
            return "reset"
        except socket.timeout:
            return "open"
        return "eof" if not data else "data"


def stopped(pid):
    """Whether every thread of `pid` is stopped (SIGSTOP has taken effect)."""
    tasks = f"/proc/{pid}/task"
    for tid in os.listdir(tasks):
        with open(f"{tasks}/{tid}/stat") as stat:
            if stat.read().rpartition(")")[2].split()[0] != "T":
                return False
    return True


def publish(port, topic, body, path="/live/"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path + topic, body=body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


SERVER = {}


def setUpModule():
    tmp = tempfile.TemporaryDirectory()
    try:
        SERVER["weft"] = Weft(os.path.realpath(tmp.name), CONF)
    except BaseException:
        tmp.cleanup()
        raise
    SERVER["tmp"] = tmp


def tearDownModule():
    try:
        code = SERVER["weft"].stop()
        if code != 0:
            raise AssertionError(f"weft exited {code} on SIGTERM\n{SERVER['weft'].stderr()}")
    finally:
        SERVER["tmp"].cleanup()


class WebSocketCase(unittest.TestCase):
    """The module's one weft; the stop test starts its own."""

    @classmethod
    def setUpClass(cls):
        cls.port = SERVER["weft"].port
        cls.dir = SERVER["weft"].dir

    def client(self, path=None, rcvbuf=None, **kw):
        """A raw client, upgraded on `path` (101 asserted) unless None."""
        c = RawClient(self.port, rcvbuf)
        self.addCleanup(c.close)
        if path is not None:
            status = c.handshake(path, **kw)
            self.assertEqual(status, 101, c.headers)
        return c

    def assertCloses(self, c, code, reply=True, timeout=5.0):
        """The server's close frame carries `code` (skipping messages before
        it); then, after our answering close (unless not `reply`), it ends
        TCP: an EOF, no reset."""
        while True:
            try:
                m = c.message()
            except Closed:
                self.fail(f"expected a {code} close, got the connection closed without one")
            except socket.timeout:
                self.fail(f"expected a {code} close, got nothing within {c.sock.gettimeout()} s")
            if m[0] == "close":
                break
        self.assertEqual(m[1], code, f"expected a {code} close, got {m[1]} {m[2]!r}")
        if reply:
            try:
                c.send(frame(CLOSE, close_payload(code)))
            except OSError:
                pass
        self.assertEqual(c.ends(timeout), "eof", "after the close frames")
        return m

    def fails_with(self, code, frames, path="/live/errors"):
        c = self.client(path)
        c.send(frames)
        return self.assertCloses(c, code)

    def access_line(self, request_line, timeout=10.0):
        """The access-log line of the request `request_line` (written when a
        session ends)."""
        path = os.path.join(self.dir, "access.log")
        found = []

        def look():
            if not os.path.exists(path):
                return False
            found[:] = [line for line in read(path).splitlines() if f'"{request_line}' in line]
            return bool(found)
        self.assertTrue(wait_for(look, timeout), f"no access-log line for {request_line}")
        return found[-1]


class Handshake(WebSocketCase):
    def test_101_with_the_accept_value_and_no_extension(self):
        c = self.client("/live/hs", extra="Sec-WebSocket-Extensions: permessage-deflate\r\n")
        self.assertEqual(c.headers.get("sec-websocket-accept"), KEY_ACCEPT)
        self.assertEqual(c.headers.get("upgrade", "").lower(), "websocket")
        self.assertIn("upgrade", c.headers.get("connection", "").lower())
        self.assertNotIn("sec-websocket-extensions", c.headers)
        self.assertNotIn("sec-websocket-protocol", c.headers)
        key = base64.b64encode(os.urandom(16)).decode()
        c2 = self.client("/live/hs", key=key)
        self.assertEqual(c2.headers.get("sec-websocket-accept"), accept_value(key))

    def test_version_8_is_426_naming_13(self):
        c = self.client()
        self.assertEqual(c.handshake("/live/hs", version="8"), 426)
        self.assertEqual(c.headers.get("sec-websocket-version"), "13")

    def test_bad_keys_are_400(self):
        for key in ("short", "dGhlIHNhbXBsZSBub25jZQ=", base64.b64encode(b"x" * 17).decode(),
                    None):
            with self.subTest(key=key):
                c = self.client()
                self.assertEqual(c.handshake("/live/hs", key=key), 400)

    def test_without_upgrade_a_get_is_not_upgraded(self):
        # No Upgrade: a plain GET of a pubsub route (neither WebSocket nor SSE).
        c = self.client()
        self.assertEqual(c.handshake("/live/hs", upgrade=None), 406)

    def test_upgrade_without_connection_upgrade_is_refused(self):
        c = self.client()
        status = c.handshake("/live/hs", connection="keep-alive")
        self.assertTrue(400 <= status < 500, status)

    def test_http_1_0_is_refused(self):
        c = self.client()
        status = c.handshake("/live/hs", http="HTTP/1.0")
        self.assertTrue(400 <= status < 500, status)

    def test_subprotocol_chosen_by_the_configured_order(self):
        c = self.client("/live/hs", protocols="superchat, chat")
        self.assertEqual(c.headers.get("sec-websocket-protocol"), "chat")
        c = self.client("/live/hs", protocols="superchat")
        self.assertEqual(c.headers.get("sec-websocket-protocol"), "superchat")
        c = self.client("/live/hs", protocols="other, CHAT")  # names compare exactly
        self.assertNotIn("sec-websocket-protocol", c.headers)

    def test_frames_in_the_handshake_packet_are_read(self):
        c = self.client()
        status = c.handshake("/live/early", first_frames=frame(PING, b"early"))
        self.assertEqual(status, 101)
        self.assertEqual(c.message(), ("pong", b"early"))


class Frames(WebSocketCase):
    """What no library sends: each fails the connection with the RFC's code."""

    def test_unmasked_frame_is_1002(self):
        self.fails_with(1002, frame(TEXT, b"hi", masked=False))

    def test_rsv_bits_are_1002(self):
        for rsv in (1, 2, 4):
            with self.subTest(rsv=rsv):
                self.fails_with(1002, frame(TEXT, b"hi", rsv=rsv))

    def test_unknown_opcodes_are_1002(self):
        for opcode in (0x3, 0x7, 0xB, 0xF):
            with self.subTest(opcode=opcode):
                self.fails_with(1002, frame(opcode, b"x"))

    def test_fragmented_ping_is_1002(self):
        self.fails_with(1002, frame(PING, b"a", fin=False))

    def test_control_frame_over_125_bytes_is_1002(self):
        self.fails_with(1002, frame(PING, b"p" * 126))

    def test_length_not_in_its_shortest_form_is_1002(self):
        self.fails_with(1002, frame(TEXT, b"hello", form=16))

    def test_invalid_utf8_text_is_1007(self):
        self.fails_with(1007, frame(TEXT, b"caf\xc3\x28"))

    def test_invalid_utf8_split_across_fragments_is_1007(self):
        c = self.client("/live/errors")
        # A valid prefix: no failure yet (a ping comes back).
        c.send(frame(TEXT, b"caf\xc3", fin=False) + frame(PING, b"still"))
        self.assertEqual(c.message(), ("pong", b"still"))
        c.send(frame(CONT, b"\x28!", fin=True))
        self.assertCloses(c, 1007)

    def test_text_ending_inside_a_character_is_1007(self):
        self.fails_with(1007, frame(TEXT, b"ok \xe2\x82", fin=False) + frame(CONT, b"", fin=True))

    def test_surrogate_in_text_is_1007(self):
        self.fails_with(1007, frame(TEXT, b"\xed\xa0\x80"))

    def test_close_codes_a_peer_may_not_send_are_1002(self):
        for code in (0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535):
            with self.subTest(code=code):
                self.fails_with(1002, frame(CLOSE, close_payload(code)))

    def test_one_byte_close_payload_is_1002(self):
        self.fails_with(1002, frame(CLOSE, b"\x03"))

    def test_close_reason_not_utf8_is_1007(self):
        self.fails_with(1007, frame(CLOSE, close_payload(1000, b"bye \xff")))

    def test_continuation_with_no_message_is_1002(self):
        self.fails_with(1002, frame(CONT, b"orphan"))

    def test_data_frame_inside_a_message_is_1002(self):
        self.fails_with(1002, frame(TEXT, b"one", fin=False) + frame(TEXT, b"two"))

    def test_message_past_max_message_is_1009_before_its_payload(self):
        c = self.client("/live/errors")
        # The header alone: the close comes while the client still holds the
        # payload.
        c.send(frame(BINARY, length=MAX_MESSAGE + 1))
        self.assertCloses(c, 1009)

    def test_message_past_max_message_is_1009_at_its_first_payload_byte(self):
        c = self.client("/live/errors")
        c.send(frame(BINARY, length=MAX_MESSAGE + 1) + b"a")
        self.assertCloses(c, 1009)

    def test_fragments_past_max_message_are_1009_before_the_payload(self):
        c = self.client("/live/errors")
        half = MAX_MESSAGE // 2 + 10
        c.send(frame(BINARY, b"a" * half, fin=False) + frame(PING, b"mid"))
        self.assertEqual(c.message(), ("pong", b"mid"))
        c.send(frame(CONT, fin=True, length=half))
        self.assertCloses(c, 1009)

    def test_a_message_of_max_message_bytes_passes(self):
        sub = self.client("/live/max-ok")
        sub.sync()
        pub = self.client("/live/max-ok")
        body = os.urandom(MAX_MESSAGE)
        pub.send(frame(BINARY, body[:1000], fin=False) + frame(CONT, body[1000:]))
        self.assertEqual(sub.message(), ("binary", body))

    def test_data_message_without_clients_publish_is_1008(self):
        self.fails_with(1008, frame(TEXT, b"may I?"), path="/feed/t")

    def test_server_closes_tcp_when_the_client_never_answers_its_close(self):
        c = self.client("/live/errors")
        c.send(frame(CONT, b"orphan"))
        m = c.message()
        self.assertEqual(m[:2], ("close", 1002))
        # The server waits for our close (up to 2 s), then closes anyway.
        self.assertEqual(c.ends(timeout=8.0), "eof")


class Messages(WebSocketCase):
    def test_ping_comes_back_as_a_pong_with_its_payload(self):
        c = self.client("/live/pings")
        for payload in (b"", b"\x00\x01hello\xff", bytes(range(125))):
            c.send(frame(PING, payload))
            self.assertEqual(c.message(), ("pong", payload))

    def test_fragments_with_pings_between_reach_others_as_one_message(self):
        subs = [self.client("/live/frag") for _ in range(3)]
        for s in subs:
            s.sync()
        pub = self.client("/live/frag")
        pub.sync()
        pub.send(frame(TEXT, "Hel", fin=False) + frame(PING, b"1") +
                 frame(CONT, b" caf\xc3", fin=False))
        self.assertEqual(pub.message(), ("pong", b"1"))
        pub.send(frame(PING, b"2") + frame(CONT, b"\xa9 \xe2\x9c\x93", fin=True))
        self.assertEqual(pub.message(), ("pong", b"2"))
        for s in subs:
            self.assertEqual(s.message(), ("text", "Hel café ✓".encode()))
            s.send(frame(PING, b"after"))
            self.assertEqual(s.message(), ("pong", b"after"), "a second message came")

    def test_post_reaches_subscribers_as_text_or_binary(self):
        s = self.client("/live/posted")
        s.sync()
        status, body = publish(self.port, "posted", "héllo".encode())
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["subscribers"], 1)
        self.assertEqual(s.message(), ("text", "héllo".encode()))
        publish(self.port, "posted", b"\xff\x00bin")
        self.assertEqual(s.message(), ("binary", b"\xff\x00bin"))

    def test_client_close_is_echoed_and_logged(self):
        c = self.client("/live/close-note")
        c.sync()
        c.send(frame(CLOSE, close_payload(1000, "done é".encode())))
        m = c.message()
        self.assertEqual(m[:2], ("close", 1000))
        self.assertEqual(c.ends(), "eof")
        line = self.access_line("GET /live/close-note HTTP/1.1")
        self.assertIn('" 101 ', line)
        self.assertRegex(line, r'"ws 1000[^"]*"$')

    def test_an_empty_close_is_answered(self):
        c = self.client("/live/close-empty")
        c.send(frame(CLOSE))
        m = c.message()
        self.assertEqual(m[0], "close")
        self.assertIn(m[1], (None, 1000), m)
        self.assertEqual(c.ends(), "eof")

    def test_bytes_and_the_end_in_one_edge_end_the_session(self):
        # The server is stopped while a frame and the client's FIN both
        # arrive, so its next epoll_wait sees them as one edge: a short read
        # of the frame must not hide the end that came with it. A pong draws
        # no answer, whose sending would raise another edge: the session
        # stayed until its ping timeout (30 s here; found by the fuzzer).
        c = self.client("/live/one-edge")
        c.sync()
        process = SERVER["weft"].process
        process.send_signal(signal.SIGSTOP)
        try:
            self.assertTrue(wait_for(lambda: stopped(process.pid), 5.0), "weft did not stop")
            c.send(frame(PONG, b"unasked"))
            c.sock.shutdown(socket.SHUT_WR)
        finally:
            process.send_signal(signal.SIGCONT)
        self.assertEqual(c.ends(timeout=5.0), "eof")
        line = self.access_line("GET /live/one-edge HTTP/1.1")
        self.assertRegex(line, r'"ws 1006 closed without a close frame"$')

    def test_slow_subscriber_is_closed_with_1008_and_a_fast_one_gets_everything(self):
        slow = self.client("/live/slow", rcvbuf=4096)
        slow.sync()
        fast = self.client("/live/slow")
        fast.sync()
        # Past the kernel's buffers (the server's send buffer grows to
        # tcp_wmem's 4 MiB) and max_queued: until a publish finds one
        # subscriber left, 1,000 messages (16 MiB) at most.
        most, size = 1000, 16 << 10
        # Weft promises everything, in order, to a subscriber whose queue
        # stays within max_queued (64k here), and a 1008 to one whose queue
        # would pass it. "Fast" must then be a fact, not a hope: a reader
        # thread that a loaded machine (or the GIL) leaves unscheduled for a
        # few messages is slow by that rule, and was rightly closed with
        # 1008 first; the publish loop then stopped at one subscriber left
        # (the slow one, which got every message and "end"), or saw none
        # left when both went in one drain. So the next message is posted
        # only once the fast one has read all but `ahead` - 1: its queue
        # never holds more than `ahead` messages (16,516 bytes each, with
        # the frame's head and kEntryCost), well within max_queued.
        ahead = 2
        got, failure = [], []
        arrived = threading.Condition()

        def read_fast():
            try:
                fast.sock.settimeout(30)
                while not got or got[-1] != ("text", b"end"):
                    m = fast.message()
                    with arrived:
                        got.append(m)
                        arrived.notify()
            except Exception as e:  # noqa: BLE001 (reported below)
                with arrived:
                    failure.append(repr(e))
                    arrived.notify()
        reader = threading.Thread(target=read_fast)
        reader.start()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        count = 0
        try:
            while count < most:
                with arrived:
                    caught_up = arrived.wait_for(lambda: len(got) > count - ahead or failure, 10)
                kept_up = bool(caught_up)
                last = [m[1][:6] if m[0] == "text" else m for m in got[-1:]]
                self.assertTrue(kept_up, f"the fast one read {len(got)} of {count} (last {last!r})")
                self.assertEqual(failure, [], f"the fast one, after {len(got)} of {count}")
                conn.request("POST", "/live/slow", body=b"%06d" % count + b"m" * (size - 6))
                r = conn.getresponse()
                answer = json.loads(r.read())
                self.assertEqual(r.status, 200)
                count += 1
                if answer["subscribers"] == 1:
                    break
        finally:
            conn.request("POST", "/live/slow", body=b"end")  # the fast one's last
            conn.getresponse().read()
            conn.close()
        self.assertLess(count, most, "the slow subscriber was never dropped")
        # The slow one, read now (its session waits 2 s for our close): whole
        # messages, in order, then the 1008 close.
        slow.sock.settimeout(10)
        seen = 0
        while True:
            try:
                m = slow.message()
            except Closed:
                self.fail(f"expected a 1008 close after {seen} messages, got EOF")
            if m[0] == "close":
                break
            self.assertEqual(m[1][:6], b"%06d" % seen)
            seen += 1
        self.assertEqual(m[1], 1008, m)
        self.assertLess(seen, count)
        slow.send(frame(CLOSE, close_payload(1008)))
        self.assertEqual(slow.ends(8), "eof")
        reader.join(40)
        self.assertEqual(failure, [])
        self.assertEqual([m[1][:6] for m in got], [b"%06d" % i for i in range(count)] + [b"end"])
        line = self.access_line("GET /live/slow HTTP/1.1")  # the slow one's: the first to end
        self.assertRegex(line, r'"ws 1008[^"]*"$')


class ServerPings(WebSocketCase):
    def test_a_peer_that_answers_pings_stays(self):
        c = self.client("/ping/answers")
        c.sock.settimeout(PING_MS * 3 / 1000 + 2)
        deadline = time.monotonic() + PING_MS * 5 / 1000
        while time.monotonic() < deadline:
            c.send(frame(PING, b"keep"))  # keeps our own reads short
            m = c.message()  # answers the server's pings on the way
            self.assertEqual(m, ("pong", b"keep"))
            time.sleep(PING_MS / 4000)
        self.assertGreaterEqual(getattr(c, "pings", 0), 3, "the server pinged")

    def test_the_first_ping_comes_within_the_interval(self):
        c = self.client("/ping/first")
        c.sock.settimeout(PING_MS / 1000 + 2)  # generous: a noisy machine
        fin, rsv, opcode, payload = c.read_frame()
        self.assertEqual(opcode, PING)
        c.send(frame(PONG, payload))
        fin, rsv, opcode, _ = c.read_frame()
        self.assertEqual(opcode, PING, "still open, pinged again")

    def test_a_peer_that_never_answers_is_closed(self):
        c = self.client("/ping/silent")
        c.sock.settimeout(PING_MS * 4 / 1000 + 5)
        start = time.monotonic()
        while True:
            m = c.message(answer_pings=False)
            if m[0] == "close":
                break
        self.assertIn(m[1], (1001, 1011), m)
        self.assertGreaterEqual(getattr(c, "pings", 0), 1)
        self.assertGreaterEqual(time.monotonic() - start, PING_MS * 1.5 / 1000)
        self.assertIn(c.ends(8), ("eof",))


class NodeClients(WebSocketCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("node") or not shutil.which("npm"):
            raise unittest.SkipTest("node and npm are not installed (.ci/install-deps)")
        build_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(
            os.path.abspath(sys.argv[1]))
        cls.node_path = npm_package(build_dir, WS_PACKAGE, "npm-ws")
        super().setUpClass()

    def node(self, *args):
        return node_json(self, os.path.join(HERE, "websocket_clients.js"), args, self.node_path)

    def test_chat_between_ws_clients_on_both_loops(self):
        seen = self.node("chat", f"ws://127.0.0.1:{self.port}",
                         f"http://127.0.0.1:{self.port}/server-status?format=json", "room")
        n = seen["clients"]
        self.assertTrue(all(active >= 2 for active in seen["loops"]), seen["loops"])
        for i, got in enumerate(seen["got"]):
            for k in range(n):
                if k == i:
                    continue
                mine = [m for m in got if isinstance(m, str) and m.startswith(f"c{k} ")]
                self.assertEqual(mine, [f"c{k} m{j} héllo ✓" for j in range(3)],
                                 f"client {i} from {k}")
            if i != 0:
                self.assertEqual([m for m in got if isinstance(m, dict)],
                                 [{"binary": "ff00fe80"}])

    def test_close_ping_subprotocol_and_1009(self):
        seen = self.node("basics", f"ws://127.0.0.1:{self.port}")
        self.assertEqual(seen["close"]["code"], 4321)
        self.assertLess(seen["close"]["ms"], 5000, "the server ended TCP after the close")
        self.assertEqual(seen["pong"], seen["pingPayload"])
        self.assertEqual(seen["protocol"], "chat")
        self.assertEqual(seen["extensions"], "")
        self.assertEqual(seen["big"]["code"], 1009)

    def test_close_reason_is_echoed(self):
        seen = self.node("basics", f"ws://127.0.0.1:{self.port}")
        self.assertEqual(seen["close"]["reason"], "good bye é")


class Stop(unittest.TestCase):
    def test_sigterm_closes_every_session_with_1001(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        weft = Weft(os.path.realpath(tmp.name), CONF)
        self.addCleanup(weft.kill)
        clients = []
        for i in range(8):
            c = RawClient(weft.port)
            self.addCleanup(c.close)
            self.assertEqual(c.handshake(f"/live/stop{i % 2}"), 101)
            c.sync()
            clients.append(c)
        weft.terminate()
        for c in clients:
            m = c.message()
            self.assertEqual(m[:2], ("close", 1001), m)
            c.send(frame(CLOSE, close_payload(1001)))
            self.assertEqual(c.ends(8), "eof")
        self.assertEqual(weft.wait(), 0, weft.stderr())
        log = read(os.path.join(tmp.name, "access.log"))
        notes = re.findall(r'"GET /live/stop\d HTTP/1.1".*"(ws \d+[^"]*)"$', log, re.M)
        self.assertEqual(len(notes), 8, log)
        self.assertTrue(all(n.startswith("ws 1001") for n in notes), notes)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[3:])
