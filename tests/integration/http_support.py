"""What the HTTP integration tests share: a weft process on a free loopback
port, raw-socket clients that read responses exactly as framed, and curl.

Python stdlib only; curl is Debian's.
"""
import email.utils
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

WEFT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/release/weft")
CURL = shutil.which("curl")

START_TIMEOUT = 5.0
STOP_TIMEOUT = 10.0


def free_port():
    """A loopback port nobody listens on right now (the conf cannot say :0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def accepts(port, timeout=0.2):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def answers(port, timeout=1.0):
    """Whether a new connection to `port` gets an HTTP answer. With
    TCP_DEFER_ACCEPT a connect alone proves nothing: the kernel completes the
    handshake for the listener (and, for a moment after it closed, may still
    for a SYN already in flight), so ask for something."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return s.recv(5) == b"HTTP/"
    except OSError:
        return False


class Weft:
    """A running weft: `Weft(conf_text_with_{port}, dir)` or Weft(args=[...]).

    stdout and stderr go to files in `dir`, so a chatty server never blocks
    on a full pipe; stop() sends SIGTERM and returns the exit code."""

    def __init__(self, dir, conf=None, args=None, port=None, cwd=None):
        self.dir = dir
        self.port = port or free_port()
        if conf is not None:
            self.conf_path = os.path.join(dir, "weft.conf")
            with open(self.conf_path, "w") as f:
                f.write(conf.replace("{port}", str(self.port)).replace("{dir}", dir))
            args = ["-c", self.conf_path]
        self.out_path = os.path.join(dir, "weft.stdout")
        self.err_path = os.path.join(dir, "weft.stderr")
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.process = subprocess.Popen([WEFT, *args], stdout=out, stderr=err, cwd=cwd,
                                            stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while not accepts(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"weft did not start on port {self.port}: exit "
                                     f"{self.process.returncode}\n{self.stderr()}")
            time.sleep(0.02)

    def stderr(self):
        try:
            with open(self.err_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def terminate(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout=STOP_TIMEOUT):
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"weft did not exit within {timeout} s of SIGTERM\n"
                                 f"{self.stderr()}")

    def stop(self):
        self.terminate()
        return self.wait()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class ServerTestCase(unittest.TestCase):
    """One weft per test class, from CONF (with {port} and {dir}); setUpDir()
    plants files in the temp dir first. The server must exit 0 on SIGTERM."""

    CONF = None

    @classmethod
    def setUpDir(cls, dir):
        pass

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.realpath(cls.tmp.name)
        cls.setUpDir(cls.dir)
        try:
            cls.weft = Weft(cls.dir, cls.CONF)
        except BaseException:
            cls.tmp.cleanup()
            raise
        cls.port = cls.weft.port

    @classmethod
    def tearDownClass(cls):
        try:
            code = cls.weft.stop()
            if code != 0:
                raise AssertionError(f"weft exited {code} on SIGTERM\n{cls.weft.stderr()}")
        finally:
            cls.tmp.cleanup()

    # --- helpers for the tests ---
    def connect(self, timeout=5.0):
        c = Client(self.port, timeout)
        self.addCleanup(c.close)
        return c

    def roundtrip(self, data, timeout=5.0):
        """Sends `data` on a new connection and reads one response."""
        c = self.connect(timeout)
        c.send(data)
        return c, c.response()

    def assertClosed(self, client, timeout=3.0):
        rest = client.rest_until_close(timeout)
        self.assertIsNotNone(rest, "the connection is still open")
        self.assertEqual(rest, b"", "bytes after the response")

    def assertStillOpen(self, client, wait=0.3):
        self.assertTrue(client.open_after(wait), "the connection was closed")

    def assertCommonHeaders(self, r):
        self.assertEqual(r.header("server"), "weft")
        assertValidDate(self, r.header("date"))

    def curl(self, path, *args, host=None):
        return curl(self.port, path, *args, host=host)


# --- responses ---

class Response:
    def __init__(self, version, status, reason, headers, body):
        self.version, self.status, self.reason = version, status, reason
        self.headers = headers  # [(name, value)] in order, names as sent
        self.body = body

    def header(self, name):
        """The first field named `name` (case-insensitive), or None."""
        for n, v in self.headers:
            if n.lower() == name.lower():
                return v
        return None

    def all(self, name):
        return [v for n, v in self.headers if n.lower() == name.lower()]

    def __repr__(self):
        return f"<{self.status} {self.reason} {self.headers} {self.body[:80]!r}>"


class Closed(Exception):
    """The connection ended before a whole response arrived."""


class Client:
    """A raw connection: send bytes as given, read responses one by one,
    framed by Content-Length or chunked (or the close, when neither)."""

    def __init__(self, port, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.timeout = timeout
        self.buf = b""
        self.eof = False

    def close(self):
        self.sock.close()

    def send(self, data):
        """Sends everything it can; a server that already answered and closed
        (an error mid-request) may reset the rest, which is not our failure."""
        if isinstance(data, str):
            data = data.encode("latin-1")
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _fill(self):
        if self.eof:
            raise Closed(f"closed with {len(self.buf)} bytes unread: {self.buf[:200]!r}")
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
            raise Closed(f"closed with {len(self.buf)} bytes unread: {self.buf[:200]!r}")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exactly(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def response(self, head=False, require_length=True):
        """The next response; `head` when it answers a HEAD (no body).
        Raises Closed, or socket.timeout when nothing more comes."""
        status_line = self._line().decode("latin-1")
        m = re.fullmatch(r"(HTTP/\d\.\d) (\d{3}) ?(.*)", status_line)
        if not m:
            raise AssertionError(f"bad status line {status_line!r}")
        headers = []
        while True:
            line = self._line().decode("latin-1")
            if line == "":
                break
            name, sep, value = line.partition(":")
            if not sep or name != name.strip():
                raise AssertionError(f"bad header line {line!r}")
            headers.append((name, value.strip()))
        r = Response(m.group(1), int(m.group(2)), m.group(3), headers, b"")
        te = r.header("transfer-encoding")
        cl = r.all("content-length")
        if head or r.status in (204, 304) or 100 <= r.status < 200:
            return r
        if te is not None:
            if te.lower() != "chunked":
                raise AssertionError(f"unexpected Transfer-Encoding {te!r}")
            if cl:
                raise AssertionError("a response with Content-Length and Transfer-Encoding")
            r.body = self._chunked()
        elif cl:
            if len(cl) != 1 or not cl[0].isdigit():
                raise AssertionError(f"bad Content-Length {cl!r}")
            r.body = self._exactly(int(cl[0]))
        else:
            if require_length:
                raise AssertionError(f"a response with neither Content-Length nor chunked: {r}")
            while not self.eof:
                try:
                    self._fill()
                except Closed:
                    pass
            r.body, self.buf = self.buf, b""
        return r

    def _chunked(self):
        body = b""
        while True:
            size_line = self._line().split(b";", 1)[0].strip()
            size = int(size_line, 16)
            if size == 0:
                break
            body += self._exactly(size)
            if self._exactly(2) != b"\r\n":
                raise AssertionError("chunk not followed by CRLF")
        while self._line() != b"":  # trailers
            pass
        return body

    def final_response(self, head=False):
        """The next response that is not 1xx (100 Continue is allowed)."""
        while True:
            r = self.response(head)
            if r.status >= 200:
                return r

    def rest_until_close(self, timeout=3.0):
        """Everything received until the server closes (b"" when it closes
        with nothing more), or None when it stays open for `timeout`."""
        deadline = time.monotonic() + timeout
        while not self.eof:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                self._fill()
            except Closed:
                break
            except socket.timeout:
                return None
            finally:
                self.sock.settimeout(self.timeout)
        rest, self.buf = self.buf, b""
        return rest

    def open_after(self, wait):
        """True when nothing arrives and the connection stays open `wait` s."""
        return self.rest_until_close(wait) is None and self.buf == b""


def get(path, host="a", extra=""):
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n"


# --- checks ---

IMF_FIXDATE = re.compile(r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|"
                         r"Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT")


def assertValidDate(test, value, slack=5.0):
    test.assertIsNotNone(value, "no Date")
    test.assertRegex(value, IMF_FIXDATE)
    when = email.utils.parsedate_to_datetime(value).timestamp()
    test.assertLess(abs(when - time.time()), slack, f"Date {value} is off")


# --- curl ---

class CurlResult:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name):
        for n, v in self.headers:
            if n.lower() == name.lower():
                return v
        return None


def curl(port, path, *args, host=None):
    """curl http://127.0.0.1:PORT{path} with `args`; the last response's
    status, headers and body."""
    if CURL is None:
        raise unittest.SkipTest("curl is not installed (Debian package curl)")
    with tempfile.TemporaryDirectory() as d:
        head_file, body_file = os.path.join(d, "head"), os.path.join(d, "body")
        cmd = [CURL, "-sS", "--max-time", "5", "-D", head_file, "-o", body_file]
        if host is not None:
            cmd += ["-H", f"Host: {host}"]
        cmd += [*args, f"http://127.0.0.1:{port}{path}"]
        r = subprocess.run(cmd, capture_output=True, timeout=15)
        if r.returncode != 0:
            raise AssertionError(f"curl {path} failed ({r.returncode}): {r.stderr.decode()}")
        with open(head_file, "rb") as f:
            heads = f.read().decode("latin-1")
        body = b""
        if os.path.exists(body_file):
            with open(body_file, "rb") as f:
                body = f.read()
    # -D holds every response's head (1xx, redirects): keep the last one.
    blocks = [b for b in heads.split("\r\n\r\n") if b.strip()]
    lines = blocks[-1].split("\r\n")
    status = int(lines[0].split()[1])
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name, value.strip()))
    return CurlResult(status, headers, body)


# --- files ---

def write(path, data):
    """Writes `data` (str or bytes) at `path`, making its directories."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def read(path):
    """The text at `path` (undecodable bytes replaced)."""
    with open(path, errors="replace") as f:
        return f.read()


def wait_for(predicate, timeout=10.0):
    """Whether `predicate()` became true within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def connect_from(port, source, timeout=10.0):
    """A TCP connection to 127.0.0.1:port (to ::1 for an IPv6 `source`),
    bound to `source` first: the address the server sees as its peer."""
    family = socket.AF_INET6 if ":" in source else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect((source if family == socket.AF_INET6 else "127.0.0.1", port))
    return s


def read_until_close(s):
    """(status, headers by lower-case name, body as text) of the one response
    a server ends by closing."""
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split(" ", 2)[1]), headers, body.decode("latin-1")


# --- npm packages the Node-driven tests use ---

def npm_package(build_dir, spec, prefix_name="npm"):
    """NODE_PATH for the npm package `spec` ("name@version"), installed once
    per build tree into BUILD_DIR/prefix_name (from the npm cache when it has
    it; a package of its own prefix survives an install of another, which
    prunes what an earlier --no-save install put beside it); raises SkipTest
    with npm's words when it cannot be installed."""
    name, _, want = spec.rpartition("@")
    prefix = os.path.join(build_dir, prefix_name)
    modules = os.path.join(prefix, "node_modules")
    try:
        with open(os.path.join(modules, name, "package.json")) as f:
            if json.load(f).get("version") == want:
                return modules
    except (OSError, ValueError):
        pass
    os.makedirs(prefix, exist_ok=True)
    cmd = ["npm", "install", "--prefix", prefix, "--prefer-offline", "--no-audit", "--no-fund",
           "--no-save", spec]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise unittest.SkipTest(f"cannot install {spec} with npm (no registry and not in "
                                f"the npm cache?): {r.stderr.strip()[-500:]}")
    return modules


def node_json(test, script, args, node_path, **env):
    """What the Node script `script` printed last as a JSON line, asserting
    it ran to the end (exit 0, no "error" in it)."""
    env = dict(os.environ, NODE_PATH=node_path, **env)
    r = subprocess.run(["node", script, *args], capture_output=True, text=True, timeout=90,
                       env=env)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    test.assertTrue(lines, f"node said nothing: {r.stderr[-2000:]}")
    seen = json.loads(lines[-1])
    test.assertNotIn("error", seen, r.stderr[-2000:])
    test.assertEqual(r.returncode, 0)
    return seen


# --- the I/O backend ---

def io_backend_running():
    """The backend a weft started now runs on, for a file without
    io_backend: as `weft -t` says (WEFT_IO_BACKEND, else epoll, made usable)."""
    r = subprocess.run([WEFT, "-t", "--listen", "127.0.0.1:1", "--root", "/"],
                       capture_output=True, text=True, timeout=20)
    m = re.search(r"^weft: io_backend = (\w+)", r.stdout, re.M)
    if not m:
        raise AssertionError(f"weft -t names no io_backend: {r.stdout}{r.stderr}")
    return m.group(1)


def start_on_backend(test, dir, conf, backend):
    """weft from `conf` on I/O `backend` (WEFT_IO_BACKEND for its start),
    checked by its start line and /server-status; killed at the test's
    cleanup. Skips `test` when io_uring is refused here."""
    before = os.environ.get("WEFT_IO_BACKEND")
    os.environ["WEFT_IO_BACKEND"] = backend
    try:
        weft = Weft(dir, conf)
    finally:
        if before is None:
            os.environ.pop("WEFT_IO_BACKEND", None)
        else:
            os.environ["WEFT_IO_BACKEND"] = before
    test.addCleanup(weft.kill)

    def stdout():
        with open(weft.out_path) as f:
            return f.read()

    test.assertTrue(wait_for(lambda: " on " in stdout()), stdout())
    running = re.search(r"loops? on (\w+);", stdout()).group(1)
    if running != backend:
        refused = re.search(r"io_backend = uring is unavailable \((.*)\)", weft.stderr())
        weft.kill()
        if backend == "uring" and refused:
            test.skipTest(f"io_uring is refused here: {refused.group(1)}")
        test.fail(f"asked for {backend}, runs {running}\n{weft.stderr()}")
    status = json.loads(curl(weft.port, "/server-status?format=json").body)
    test.assertEqual(status["io_backend"], backend)
    return weft


def fd_count(pid):
    """How many fds process `pid` holds."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def fds(pid):
    """What weft's fds are, for a failure's message."""
    names = []
    for fd in sorted(os.listdir(f"/proc/{pid}/fd"), key=int):
        try:
            names.append(f"{fd}:{os.readlink(f'/proc/{pid}/fd/{fd}')}")
        except OSError:
            pass
    return " ".join(names)
