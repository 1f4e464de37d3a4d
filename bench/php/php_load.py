#!/usr/bin/env python3
"""bench/http_load's fixed-count mode for responses that may be chunked.

PHP sends no Content-Length unless a script sets one, so a server in front of
PHP-FPM answers HTTP/1.1 clients with a chunked body, which bench/http_load
refuses. This client takes the same flags and speaks the same --pause protocol,
so bench/lib.sh's begin/go/finish drive it as they drive http_load:

  php_load.py --port P [--path /x] [--connections K] [--requests N]
              [--warmup W] [--pause] [--timeout S]
      N GETs over K keep-alive connections, one in flight on each; each
      response must be a 200 with a Content-Length or a chunked body.
      Prints: done requests=N connections=K seconds=S rps=R reconnects=C
  php_load.py --free-port
      prints a loopback port that was free a moment ago.

Its speed does not matter to the figures it is used for (a server's
instructions and syscalls, divided by N): it only has to be exact.
Exits 1 with a reason on any error, or when S seconds (default 60) pass.
"""

import argparse
import os
import selectors
import signal
import socket
import sys
import time


def fail(why):
    sys.stderr.write(f"php_load: {why}\n")
    sys.stderr.flush()
    os._exit(1)


class Response:
    """One response read from any split of the byte stream."""

    HEAD, LENGTH, CHUNK_SIZE, CHUNK_DATA, CHUNK_END, LAST_CRLF = range(6)

    def __init__(self):
        self.state = self.HEAD
        self.pending = bytearray()  # a head or a chunk-size line not yet complete
        self.left = 0  # body or chunk bytes still due
        self.closing = False  # the last complete response said Connection: close

    def in_progress(self):
        return self.state != self.HEAD or bool(self.pending)

    def feed(self, data, at):
        """Consumes data from `at`; returns where the response ended, or None
        when all of data was used and the response goes on."""
        while at < len(data):
            if self.state == self.HEAD:
                self.pending += data[at:]
                end = self.pending.find(b"\r\n\r\n")
                if end < 0:
                    if len(self.pending) > 65536:
                        fail("a response head over 64 KiB")
                    return None
                at = len(data) - (len(self.pending) - end - 4)
                self._parse_head(bytes(self.pending[: end + 4]))
                self.pending.clear()
                if self.state == self.LENGTH and self.left == 0:
                    return self._finish(at)
            elif self.state == self.LENGTH:
                take = min(self.left, len(data) - at)
                at += take
                self.left -= take
                if self.left == 0:
                    return self._finish(at)
            elif self.state in (self.CHUNK_SIZE, self.CHUNK_END, self.LAST_CRLF):
                end = data.find(b"\n", at)
                if end < 0:
                    self.pending += data[at:]
                    if len(self.pending) > 1024:
                        fail("a chunk-size line over 1 KiB")
                    return None
                self.pending += data[at : end + 1]
                at = end + 1
                line = bytes(self.pending).rstrip(b"\r\n")
                self.pending.clear()
                if self.state == self.CHUNK_END:
                    if line:
                        fail("no CRLF after a chunk's data")
                    self.state = self.CHUNK_SIZE
                elif self.state == self.LAST_CRLF:
                    if not line:  # trailers, if any, end at an empty line
                        return self._finish(at)
                else:
                    try:
                        self.left = int(line.split(b";")[0], 16)
                    except ValueError:
                        fail(f"a bad chunk size: {line[:40]!r}")
                    self.state = self.CHUNK_DATA if self.left else self.LAST_CRLF
            else:  # CHUNK_DATA
                take = min(self.left, len(data) - at)
                at += take
                self.left -= take
                if self.left == 0:
                    self.state = self.CHUNK_END
        return None

    def _finish(self, at):
        self.state = self.HEAD
        return at

    def _parse_head(self, head):
        status = head[: head.find(b"\r\n")]
        if not status.startswith(b"HTTP/1.") or status[8:13] != b" 200 ":
            fail(f"unexpected response: {status[:200].decode('latin-1')}")
        length, chunked, self.closing = None, False, False
        for line in head.split(b"\r\n")[1:]:
            if not line:
                continue
            name, colon, value = line.partition(b":")
            if not colon:
                fail("a header line without ':'")
            name, value = name.strip().lower(), value.strip().lower()
            if name == b"content-length":
                if not value.isdigit():
                    fail("a bad Content-Length")
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = value.split(b",")[-1].strip() == b"chunked"
            elif name == b"connection":
                self.closing = value == b"close"
        if chunked:
            self.state = self.CHUNK_SIZE
        elif length is not None:
            self.state, self.left = self.LENGTH, length
        else:
            fail("a response with neither Content-Length nor chunked")


class Load:
    def __init__(self, args):
        self.args = args
        self.request = (
            f"GET {args.path} HTTP/1.1\r\nHost: 127.0.0.1:{args.port}\r\n\r\n"
        ).encode()
        self.selector = selectors.DefaultSelector()
        self.socks = [None] * args.connections
        self.readers = [Response() for _ in range(args.connections)]
        self.waiting = [False] * args.connections
        self.reconnects = 0
        self.sent = self.done = self.target = 0

    def run(self):
        signal.alarm(self.args.timeout)  # the bound on the whole run, pauses included
        for c in range(self.args.connections):
            self.open(c)
        if self.args.warmup > 0:
            self.phase(self.args.warmup)
        if self.args.pause:
            self.wait_for_go("ready")
        seconds = self.phase(self.args.requests)
        print(
            f"done requests={self.args.requests} connections={self.args.connections}"
            f" seconds={seconds:.3f} rps={self.args.requests / seconds:.0f}"
            f" reconnects={self.reconnects}",
            flush=True,
        )
        if self.args.pause:
            self.wait_for_go(None)

    @staticmethod
    def wait_for_go(say):
        if say:
            print(say, flush=True)
        if not sys.stdin.readline():
            fail("stdin closed during --pause")

    def open(self, c):
        try:
            s = socket.create_connection(("127.0.0.1", self.args.port))
        except OSError as e:
            fail(f"connect: {e.strerror}")
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.socks[c] = s
        self.selector.register(s, selectors.EVENT_READ, c)

    def reopen(self, c):
        self.selector.unregister(self.socks[c])
        self.socks[c].close()
        self.reconnects += 1
        self.open(c)

    def phase(self, requests):
        """`requests` requests; returns the seconds they took. No response is
        due on any connection at the end."""
        self.sent = self.done = 0
        self.target = requests
        start = time.monotonic()
        for c in range(len(self.socks)):
            self.next_request(c)
        while self.done < self.target:
            for key, _ in self.selector.select():
                self.on_readable(key.data)
        return time.monotonic() - start

    def next_request(self, c):
        if self.sent == self.target:
            return
        self.sent += 1
        self.waiting[c] = True
        try:
            self.socks[c].sendall(self.request)
        except OSError as e:
            fail(f"could not send a request: {e.strerror}")

    def on_readable(self, c):
        try:
            data = self.socks[c].recv(256 * 1024)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            fail(f"recv: {e.strerror}")
        if not data and not self.waiting[c]:
            return self.reopen(c)  # closed between responses
        if not data:
            fail("the server closed a connection with a response due")
        reader, at = self.readers[c], 0
        while at < len(data):
            if not self.waiting[c]:
                fail("bytes after a complete response")
            end = reader.feed(data, at)
            if end is None:
                return
            at = end
            self.done += 1
            self.waiting[c] = False
            if reader.closing:
                if at < len(data):
                    fail("bytes after a closing response")
                self.reopen(c)
            self.next_request(c)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])


def main():
    def positive(text):
        value = int(text)
        if value <= 0:
            raise argparse.ArgumentTypeError("must be positive")
        return value

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--free-port", action="store_true")
    p.add_argument("--port", type=positive)
    p.add_argument("--path", default="/")
    p.add_argument("--connections", type=positive, default=16)
    p.add_argument("--requests", type=positive, default=1000)
    p.add_argument("--warmup", type=positive, default=0)
    p.add_argument("--pause", action="store_true")
    p.add_argument("--timeout", type=positive, default=60)
    args = p.parse_args()
    if args.free_port:
        return free_port()
    if not args.port or args.port > 65535:
        p.error("--port P is required (1-65535)")

    def timed_out(*_):
        fail("timed out")

    signal.signal(signal.SIGALRM, timed_out)
    Load(args).run()


if __name__ == "__main__":
    main()
