"""A WebSocket client (RFC 6455) and an event-stream client (SSE) built by
hand on raw sockets, for integration tests: the handshake, masked frames
out, frames in (as sent: no reassembly unless asked), the close.

Python stdlib only.
"""
import base64
import hashlib
import os
import socket
import struct
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TEXT, BINARY, CLOSE, PING, PONG = 1, 2, 8, 9, 10


class Closed(Exception):
    """The server closed the connection (EOF)."""


def accept_for(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def _read_head(sock, buffer=b""):
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise Closed(f"closed before a response head: {buffer!r}")
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, rest


class WebSocket:
    """`WebSocket(port, "/live/t")` connects and sends the upgrade; `status`
    and `headers` (lower-case names) are the answer's. A refused upgrade
    keeps its body in `rest`."""

    def __init__(self, port, path, host="a", headers=(), version="13", key=None,
                 timeout=5.0, source=None):
        self.key = key or base64.b64encode(os.urandom(16)).decode()
        if source:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.bind((source, 0))
            self.sock.settimeout(timeout)
            self.sock.connect(("127.0.0.1", port))
        else:
            self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Upgrade: websocket",
                 "Connection: Upgrade", f"Sec-WebSocket-Key: {self.key}"]
        if version is not None:
            lines.append(f"Sec-WebSocket-Version: {version}")
        lines += list(headers)
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.status, self.headers, self.rest = _read_head(self.sock)
        self.buffer = self.rest if self.status == 101 else b""

    def close_socket(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # --- out ---
    def send_frame(self, opcode, payload=b"", fin=True, mask=True):
        if isinstance(payload, str):
            payload = payload.encode()
        head = bytes([(0x80 if fin else 0) | opcode])
        n = len(payload)
        bit = 0x80 if mask else 0
        if n < 126:
            head += bytes([bit | n])
        elif n < 65536:
            head += bytes([bit | 126]) + struct.pack("!H", n)
        else:
            head += bytes([bit | 127]) + struct.pack("!Q", n)
        if mask:
            key = os.urandom(4)
            head += key
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + payload)

    def send_text(self, text):
        self.send_frame(TEXT, text)

    def send_close(self, code=1000, reason=b""):
        self.send_frame(CLOSE, struct.pack("!H", code) + reason)

    # --- in ---
    def _need(self, n, deadline):
        while len(self.buffer) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no frame in time")
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Closed("the server closed the connection")
            self.buffer += chunk

    def recv_frame(self, timeout=5.0):
        """(opcode, payload bytes) of the next frame."""
        deadline = time.monotonic() + timeout
        self._need(2, deadline)
        b0, b1 = self.buffer[0], self.buffer[1]
        if b1 & 0x80:
            raise AssertionError("the server masked a frame")
        n, at = b1 & 0x7F, 2
        if n == 126:
            self._need(4, deadline)
            n, at = struct.unpack("!H", self.buffer[2:4])[0], 4
        elif n == 127:
            self._need(10, deadline)
            n, at = struct.unpack("!Q", self.buffer[2:10])[0], 10
        self._need(at + n, deadline)
        payload = self.buffer[at:at + n]
        self.buffer = self.buffer[at + n:]
        return b0 & 0x0F, payload

    def recv_data(self, timeout=5.0):
        """The next text or binary frame's payload, answering nothing and
        skipping pings; a close frame raises Closed with its code."""
        while True:
            opcode, payload = self.recv_frame(timeout)
            if opcode in (TEXT, BINARY):
                return payload
            if opcode == CLOSE:
                raise Closed(close_code(payload))

    def recv_close(self, timeout=5.0):
        """The code of the close frame that comes next after any data."""
        while True:
            opcode, payload = self.recv_frame(timeout)
            if opcode == CLOSE:
                return close_code(payload)

    def closed_by_server(self, timeout=5.0):
        """Whether the server ends the TCP connection within `timeout`."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                self._need(len(self.buffer) + 1, deadline)
                self.buffer = b""
        except Closed:
            return True
        except (socket.timeout, TimeoutError):
            return False
        except ConnectionResetError:
            return True


def close_code(payload):
    return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005


class EventStream:
    """GET `path` with Accept: text/event-stream; `status` and `headers`,
    then next_event() -> {"id": ..., "data": ...} or a comment."""

    def __init__(self, port, path, host="a", last_event_id=None, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Accept: text/event-stream"]
        if last_event_id is not None:
            lines.append(f"Last-Event-ID: {last_event_id}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.status, self.headers, self.buffer = _read_head(self.sock)
        self.comments = 0

    def close_socket(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def next_event(self, timeout=5.0):
        """The next event's fields (id, data joined by newlines); comments
        are counted in `comments` and skipped. Raises Closed at the end."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout("no event in time")
                self.sock.settimeout(left)
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise Closed("the stream ended")
                self.buffer += chunk
            block, _, self.buffer = self.buffer.partition(b"\n\n")
            event = {}
            data = []
            for line in block.decode().split("\n"):
                if line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "data":
                    data.append(value)
                elif name:
                    event[name] = value
            if not data and not event:
                self.comments += 1
                continue
            event["data"] = "\n".join(data)
            return event
