#!/usr/bin/env python3
"""SIGHUP reloads the configuration file without losing a request:

- a load (keep-alive, pipelined and new connections) through ten reloads
  alternating two configurations that differ in a body and a handler: no
  error, no reset, every response from one of them and logged once in that
  one's access log, each kept-alive connection switching with its next
  request, every replaced server gone; SIGHUPs back to back end on the last
  file;
- a file that does not load, or loads and does not build (a missing root, a
  port taken, an error log that cannot be opened), changes nothing; an
  include is read again; the error log follows the file;
- a listener added answers, one removed refuses while what it accepted is
  answered, one kept never refuses (TCP, unix, a socket systemd passed);
- a PHP response streaming, or a file downloading, through reloads ends as
  it began; SIGTERM right after SIGHUP drains and exits 0;
- a pool kept across reloads never lets more than max_conns connections
  reach PHP-FPM and keeps its idle connections; a lowered max_conns holds, a
  raised one lets the queue go, a pool no longer named closes its
  connections;
- systemd hears RELOADING=1 with MONOTONIC_USEC, then READY=1;
- without -c, and for threads or user, a reload changes nothing and says so.

    test_reload.py WEFT_BINARY
"""
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import (WEFT, Client, Weft, answers, free_port, get, read,  # noqa: E402
                          wait_for, write)
from php_support import Marks, PhpFpm, backend_connections, require_php_fpm  # noqa: E402

ACTIVATE = shutil.which("systemd-socket-activate")

# Upper bounds for behaviour on a loaded 2-core machine, never speeds.
RELOAD_BOUND = 15.0  # SIGHUP until weft logs the outcome
SWITCH_BOUND = 10.0  # a reload logged until every client has seen it
LOAD_BOUND = 60.0  # a load generator's whole run

RELOAD_LINE = re.compile(r"^weft: (?:reloaded |reload: ).*$", re.M)


def conf_text(conf, dir, port, **ports):
    text = conf.replace("{port}", str(port)).replace("{dir}", dir)
    for name, value in ports.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def reload(weft, conf=None, log=None, **ports):
    """Writes `conf` (with {port}, {dir} and `ports`) over weft's file when
    given, sends SIGHUP and returns the line weft logs for it on stderr (or
    in the file `log`): "weft: reloaded ..." or "weft: reload: WHY; still
    serving ..."."""
    def lines():
        return RELOAD_LINE.findall(read_or_empty(log) if log else weft.stderr())
    before = len(lines())
    sighup(weft, conf, **ports)
    if not wait_for(lambda: len(lines()) > before, RELOAD_BOUND):
        raise AssertionError(f"weft logged no reload within {RELOAD_BOUND} s in "
                             f"{log or 'stderr'}\n{weft.stderr()}")
    return lines()[before]


def sighup(weft, conf=None, **ports):
    """Writes `conf` over weft's file when given and sends SIGHUP."""
    if conf is not None:
        path = weft.conf_path + ".new"
        write(path, conf_text(conf, weft.dir, weft.port, **ports))
        os.replace(path, weft.conf_path)
    weft.process.send_signal(signal.SIGHUP)


def read_or_empty(path):
    try:
        return read(path)
    except FileNotFoundError:
        return ""


def refused(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def body(client, path="/body"):
    client.send(get(path))
    r = client.response()
    return r.body if r.status == 200 else r.status


def weft_holds(weft, client):
    """Whether weft's process holds the server end of `client`'s TCP
    connection (accepted it: with TCP_DEFER_ACCEPT a connection is accepted
    only once its first bytes arrive)."""
    port = client.sock.getsockname()[1]
    peer_port = client.sock.getpeername()[1]
    local = f"0100007F:{peer_port:04X}"
    remote = f"0100007F:{port:04X}"
    inode = None
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if fields[1] == local and fields[2] == remote:
                inode = fields[9]
    if inode is None:
        return False
    fds = f"/proc/{weft.process.pid}/fd"
    for fd in os.listdir(fds):
        try:
            if os.readlink(os.path.join(fds, fd)) == f"socket:[{inode}]":
                return True
        except OSError:
            pass
    return False


def open_files(weft, *names):
    """How many of weft's descriptors are open on each file of its dir named."""
    counts = [0] * len(names)
    fds = f"/proc/{weft.process.pid}/fd"
    for fd in os.listdir(fds):
        try:
            target = os.readlink(os.path.join(fds, fd))
        except OSError:
            continue
        for i, name in enumerate(names):
            if target == os.path.join(weft.dir, name):
                counts[i] += 1
    return counts


@contextlib.contextmanager
def environment(**values):
    """os.environ with `values` set, for a process started inside."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class ReloadTestCase(unittest.TestCase):
    """A weft per test (reloads change it), in a temp dir of the test's."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = os.path.realpath(tmp.name)
        os.makedirs(os.path.join(self.dir, "www"))

    def start(self, conf=None, args=None, port=None):
        weft = Weft(self.dir, conf, args=args, port=port)
        self.addCleanup(self.stop, weft)
        return weft

    def stop(self, weft):
        code = weft.stop()
        self.assertEqual(code, 0, f"weft exited {code} on SIGTERM\n{weft.stderr()}")

    def connect(self, port):
        c = Client(port, timeout=10.0)
        self.addCleanup(c.close)
        return c

    def assertSoon(self, fn, expected):
        """fn() gives `expected` within SWITCH_BOUND: each loop takes a new
        configuration from a call posted to it, a moment after the reload
        is logged."""
        seen = []
        ok = wait_for(lambda: seen.append(fn()) or seen[-1] == expected, SWITCH_BOUND)
        self.assertTrue(ok, f"{seen[-1:]!r}, not {expected!r}")

    def assertReloaded(self, line):
        self.assertTrue(line.startswith("weft: reloaded "), line)

    def assertRefusedReload(self, line, why):
        self.assertRegex(line, r"^weft: reload: .*; still serving the configuration before$")
        self.assertIn(why, line)


def site_conf(body, x_handler, head="", listeners=("127.0.0.1:{port}",), threads=2):
    lines = [f"threads = {threads}", "keep_alive_timeout = 60s", "request_timeout = 30s", head]
    lines += [f"listener {p}" for p in listeners]
    return "\n".join(lines) + f"""
site {{
    root = {{dir}}/www
    response /body {{
        body = {body}
    }}
{x_handler}
}}
"""


# The two configurations the load alternates: a body and /x's handler differ.
X_RESPONSE = """\
    response /x {
        body = x-from-A
    }"""
X_REDIRECT = """\
    redirect /x {
        to = /elsewhere
        status = 302
    }"""
CONF_A = site_conf("A", X_RESPONSE)
CONF_B = site_conf("B", X_REDIRECT)


def config_of(path, r):
    """Which configuration answered `path` with `r`: "A", "B", or None."""
    if path == "/body" and r.status == 200 and r.body in (b"A", b"B"):
        return r.body.decode()
    if path == "/x" and r.status == 200 and r.body == b"x-from-A":
        return "A"
    if path == "/x" and r.status == 302 and r.header("location") == "/elsewhere":
        return "B"
    return None


class LoadWorker(threading.Thread):
    """Requests /body and /x until told to stop (or LOAD_BOUND, or `limit`
    pairs): on one kept-alive connection ("keep"), the pair pipelined in one
    write ("pipeline"), or each pair on a new connection ("new"). Records the
    configuration of every response; anything else ends it as an error."""

    def __init__(self, port, kind, stop, classify=config_of, limit=20000):
        super().__init__(daemon=True)
        self.port, self.kind, self.stop, self.limit = port, kind, stop, limit
        self.classify = classify
        self.configs = []  # per response, in order
        self.error = None
        self.client = None

    def run(self):
        deadline = time.monotonic() + LOAD_BOUND
        try:
            if self.kind != "new":
                self.client = Client(self.port, timeout=10.0)
            for i in range(self.limit):
                if self.stop.is_set() or time.monotonic() > deadline:
                    break
                if self.kind == "new":
                    c = Client(self.port, timeout=10.0)
                    try:
                        self.pair(c, close=i % 2 == 0)
                        if i % 2 == 0 and c.rest_until_close(5.0) != b"":
                            raise AssertionError("Connection: close left the connection open")
                    finally:
                        c.close()
                else:
                    self.pair(self.client)
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = f"{self.kind} after {len(self.configs)} responses: {e!r}"

    def pair(self, c, close=False):
        paths = ["/body", "/x"]
        heads = [get(p, extra="Connection: close\r\n" if close and p == "/x" else "")
                 for p in paths]
        if self.kind == "pipeline":
            c.send("".join(heads))
        for path, head in zip(paths, heads):
            if self.kind != "pipeline":
                c.send(head)
            r = c.response()
            config = self.classify(path, r)
            if config is None:
                raise AssertionError(f"{path}: neither configuration's answer: {r}")
            self.configs.append(config)

    def last(self):
        return self.configs[-1] if self.configs else None


class LoadThroughReloads(ReloadTestCase):
    RELOADS = 10

    def test_ten_reloads_under_load_lose_nothing(self):
        conf_a = site_conf("A", X_RESPONSE, head="access_log = {dir}/a.log")
        conf_b = site_conf("B", X_REDIRECT, head="access_log = {dir}/b.log")
        weft = self.start(conf_a)
        stop = threading.Event()
        workers = [LoadWorker(weft.port, kind, stop)
                   for kind in ("keep", "keep", "pipeline", "new", "new")]
        for w in workers:
            w.start()

        def finish():
            stop.set()
            for w in workers:
                w.join(LOAD_BOUND)
        self.addCleanup(lambda: [w.client.close() for w in workers if w.client])
        self.addCleanup(finish)

        def check_workers():
            failed = [w.error for w in workers if w.error]
            self.assertEqual(failed, [], weft.stderr())

        def all_on(config):
            check_workers()
            return all(w.last() == config for w in workers)

        self.assertTrue(wait_for(lambda: all_on("A"), SWITCH_BOUND), "the load did not start")
        idle = None
        expected = "A"
        for i in range(self.RELOADS):
            expected = "B" if expected == "A" else "A"
            self.assertReloaded(reload(weft, conf_b if expected == "B" else conf_a))
            self.assertTrue(wait_for(lambda: all_on(expected), SWITCH_BOUND),
                            f"reload {i + 1}: not every client got configuration {expected}: "
                            f"{[w.last() for w in workers]}")
            if idle is None:
                # Idle from now on, through every reload but the first.
                idle = self.connect(weft.port)
                self.assertSoon(lambda: body(idle), b"B")
        finish()
        check_workers()

        # Each kept-alive connection went from one configuration to the
        # next exactly once a reload: never back to the one before.
        for w in workers:
            if w.kind == "new":
                continue
            switches = sum(1 for a, b in zip(w.configs, w.configs[1:]) if a != b)
            self.assertEqual(switches, self.RELOADS, f"{w.kind}: {''.join(w.configs)[:2000]}")
        # After the last reload (A), old kept-alive connections serve A.
        for w in workers:
            if w.client:
                self.assertEqual(body(w.client), b"A")
                self.assertEqual(body(w.client, "/x"), b"x-from-A")
        self.assertSoon(lambda: body(idle), b"A")
        self.assertEqual(body(idle, "/x"), b"x-from-A")
        self.assertEqual(weft.stderr().count("weft: reloaded "), self.RELOADS)

        # The replaced servers went, and their access logs with them.
        self.assertTrue(wait_for(lambda: open_files(weft, "a.log", "b.log") == [1, 0],
                                 SWITCH_BOUND), open_files(weft, "a.log", "b.log"))
        # Each request is logged once, by the configuration that answered it.
        self.stop(weft)
        answered = [c for w in workers for c in w.configs]
        answered += ["B"] + ["A"] * 2 * (1 + sum(1 for w in workers if w.client))
        for name, config, x_status in [("a.log", "A", 200), ("b.log", "B", 302)]:
            with open(os.path.join(weft.dir, name)) as f:
                lines = f.read().splitlines()
            self.assertEqual(len(lines), answered.count(config), name)
            for line in lines:
                self.assertRegex(line, rf'"GET (/body HTTP/1.1" 200 1|/x HTTP/1.1" {x_status}) ')

    def test_reloads_back_to_back(self):
        """SIGHUPs faster than weft reloads: it ends on the last file, and
        every server it replaced goes."""
        def conf(i):
            return site_conf(f"body-{i}", X_RESPONSE, head=f"access_log = {{dir}}/{i}.log")
        weft = self.start(conf(0))
        kept = self.connect(weft.port)
        self.assertEqual(body(kept), b"body-0")
        stop = threading.Event()

        def classify(path, r):
            if path == "/body" and r.status == 200 and re.fullmatch(rb"body-\d+", r.body):
                return r.body.decode()
            return "x" if (path, r.status, r.body) == ("/x", 200, b"x-from-A") else None
        workers = [LoadWorker(weft.port, kind, stop, classify) for kind in ("keep", "new")]
        for w in workers:
            w.start()
        for i in range(1, 11):
            sighup(weft, conf(i))
            time.sleep(0.01)
        self.assertTrue(wait_for(lambda: body(self.connect(weft.port)) == b"body-10",
                                 RELOAD_BOUND), weft.stderr())
        self.assertEqual(body(kept), b"body-10")
        stop.set()
        for w in workers:
            w.join(LOAD_BOUND)
            if w.client:
                w.client.close()
        self.assertEqual([w.error for w in workers if w.error], [])
        logs = [f"{i}.log" for i in range(11)]
        self.assertTrue(wait_for(lambda: open_files(weft, *logs) == [0] * 10 + [1], SWITCH_BOUND),
                        open_files(weft, *logs))


class BadConfig(ReloadTestCase):
    """A reload that fails changes nothing, and the next good one works."""

    def setUp(self):
        super().setUp()
        self.weft = self.start(CONF_A)
        self.kept = self.connect(self.weft.port)
        self.assertEqual(body(self.kept), b"A")

    def assertChangesNothing(self, conf, why, **ports):
        """A reload to `conf` is refused saying `why` (a regex), and A
        still answers on the kept connection and on a new one."""
        line = reload(self.weft, conf, **ports)
        self.assertRefusedReload(line, "")
        self.assertRegex(line, why)
        self.assertEqual(body(self.kept), b"A")
        self.assertEqual(body(self.kept, "/x"), b"x-from-A")
        self.assertEqual(body(self.connect(self.weft.port)), b"A")

    def tearDown(self):
        # The next good reload takes effect.
        self.assertReloaded(reload(self.weft, CONF_B))
        self.assertSoon(lambda: body(self.kept), b"B")
        self.assertEqual(body(self.kept, "/x"), 302)
        self.assertSoon(lambda: body(self.connect(self.weft.port)), b"B")

    def test_a_syntax_error_is_logged_with_its_place(self):
        bad = site_conf("B", X_RESPONSE.replace("body = x", "bodyy = x"))
        lines = conf_text(bad, self.dir, self.weft.port).split("\n")
        row = next(i for i, line in enumerate(lines) if "bodyy" in line)
        column = lines[row].index("bodyy") + 1
        path = re.escape(self.weft.conf_path)
        self.assertChangesNothing(bad, rf"{path}:{row + 1}:{column}: unknown key 'bodyy'")
        # An unclosed block: the error is at the end of the file.
        self.assertChangesNothing(CONF_A.rstrip().rstrip("}"), rf"{path}:\d+:\d+: ")

    def test_a_root_that_does_not_exist_builds_nothing(self):
        missing = os.path.join(self.dir, "missing")
        self.assertChangesNothing(
            site_conf("B", f"    files /x {{\n        root = {missing}\n    }}"),
            f"cannot open the root {re.escape(missing)}")

    def test_a_port_taken_opens_no_listener(self):
        taken = socket.socket()
        self.addCleanup(taken.close)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        other, busy = free_port(), taken.getsockname()[1]
        # `other` opens before `busy` fails: the undo closes it again.
        listeners = ("127.0.0.1:{port}", "127.0.0.1:{other}", "127.0.0.1:{busy}")
        self.assertChangesNothing(site_conf("B", X_REDIRECT, listeners=listeners), str(busy),
                                  other=other, busy=busy)
        self.assertTrue(wait_for(lambda: refused(other), SWITCH_BOUND),
                        f"{other} still listens after the failed reload")

    def test_an_error_log_that_cannot_be_opened(self):
        log = os.path.join(self.dir, "no-such-dir", "error.log")
        self.assertChangesNothing(site_conf("B", X_REDIRECT, head=f"error_log = {log}"),
                                  f"cannot open error log {re.escape(log)}")


BIG = 16 << 20


class KeptConnections(ReloadTestCase):
    """One loop, so a new connection answered by the new configuration says
    the loop has switched: then each kept connection's next request must be
    the new configuration's, at once."""

    def conf(self, body, x_handler):
        return site_conf(body, x_handler, threads=1)

    def switched(self, weft, config):
        self.assertTrue(wait_for(lambda: body(self.connect(weft.port)) == config.encode(),
                                 SWITCH_BOUND))

    def test_idle_and_half_sent_requests_take_the_new_configuration(self):
        weft = self.start(self.conf("A", X_RESPONSE))
        idle, half = self.connect(weft.port), self.connect(weft.port)
        self.assertEqual(body(idle), b"A")
        self.assertEqual(body(half), b"A")
        half.send("GET /body HTTP/1.1\r\n")
        self.assertReloaded(reload(weft, self.conf("B", X_REDIRECT)))
        self.switched(weft, "B")
        self.assertEqual(body(idle), b"B")
        self.assertEqual(body(idle, "/x"), 302)
        half.send("Host: a\r\n\r\n")
        r = half.response()
        # Begun before the reload: either answer, whole.
        self.assertIn((r.status, r.body), [(200, b"A"), (200, b"B")])
        self.assertEqual(body(half), b"B")
        self.assertEqual(body(half, "/x"), 302)

    def test_a_download_started_before_reloads_ends_whole(self):
        """The file comes from the server it began with, two reloads gone."""
        data = os.urandom(BIG)
        write(os.path.join(self.dir, "www", "x", "big"), data)
        files = "    files /x {\n    }"
        weft = self.start(self.conf("A", files))
        c = self.connect(weft.port)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.send(get("/x/big"))
        c.sock.settimeout(10.0)
        while b"\r\n\r\n" not in c.buf:
            c._fill()
        self.assertReloaded(reload(weft, self.conf("B", X_REDIRECT)))
        self.assertReloaded(reload(weft, self.conf("C", X_RESPONSE)))
        self.switched(weft, "C")
        self.assertLess(len(c.buf), BIG, "the whole file came before the reloads")
        c.buf = bytearray(c.buf)  # appended to in place: 16 MiB in 64 KiB reads
        r = c.response()
        self.assertEqual(r.status, 200)
        self.assertTrue(r.body == data, f"{len(r.body)} bytes, not the file's {BIG}")
        self.assertEqual(body(c), b"C")
        self.assertEqual(body(c, "/x"), b"x-from-A")


class IncludedFiles(ReloadTestCase):
    """SIGHUP re-reads the includes too."""

    MAIN = """\
threads = 2
keep_alive_timeout = 60s
listener 127.0.0.1:{port}
include sites/site.conf
"""
    SITE = """\
site {{
    response /body {{
        {key} = {body}
    }}
}}
"""

    def test_a_changed_include_is_read_again(self):
        included = os.path.join(self.dir, "sites", "site.conf")
        write(included, self.SITE.format(key="body", body="A"))
        weft = self.start(self.MAIN)
        kept = self.connect(weft.port)
        self.assertEqual(body(kept), b"A")
        write(included, self.SITE.format(key="body", body="B"))
        self.assertReloaded(reload(weft))
        self.assertSoon(lambda: body(kept), b"B")
        # A mistake in the include is placed in the include.
        write(included, self.SITE.format(key="bodyy", body="C"))
        self.assertRefusedReload(reload(weft), f"{included}:3:9: unknown key 'bodyy'")
        os.unlink(included)
        self.assertRefusedReload(reload(weft), f"cannot read {included}")
        self.assertEqual(body(kept), b"B")
        write(included, self.SITE.format(key="body", body="D"))
        self.assertReloaded(reload(weft))
        self.assertSoon(lambda: body(kept), b"D")


class StopAfterReload(ReloadTestCase):
    def test_sigterm_right_after_sighup_drains_and_exits(self):
        """A download begun before both ends whole; weft exits 0."""
        data = os.urandom(BIG)
        write(os.path.join(self.dir, "www", "x", "big"), data)
        weft = Weft(self.dir, site_conf("A", "    files /x {\n    }"))
        self.addCleanup(weft.kill)
        idle = self.connect(weft.port)
        self.assertEqual(body(idle), b"A")
        c = self.connect(weft.port)
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.send(get("/x/big", extra="Connection: close\r\n"))
        while b"\r\n\r\n" not in c.buf:
            c._fill()
        sighup(weft, CONF_B)
        weft.terminate()
        c.buf = bytearray(c.buf)  # appended to in place: 16 MiB in 64 KiB reads
        r = c.response()
        self.assertEqual(r.status, 200)
        self.assertTrue(r.body == data, f"{len(r.body)} bytes, not the file's {BIG}")
        self.assertEqual(weft.wait(), 0, weft.stderr())


class ErrorLog(ReloadTestCase):
    """error_log as a reload names it: the reload's own line is the first
    there."""

    def conf(self, error_log, body="A"):
        return site_conf(body, X_RESPONSE, head=f"error_log = {error_log}")

    def test_error_log_moves_from_file_to_file(self):
        weft = self.start(CONF_A)
        one, two = os.path.join(self.dir, "one.log"), os.path.join(self.dir, "two.log")
        self.assertReloaded(reload(weft, self.conf(one), log=one))
        self.assertRefusedReload(reload(weft, "site {", log=one), weft.conf_path)
        self.assertReloaded(reload(weft, self.conf(two, "B"), log=two))
        self.assertSoon(lambda: body(self.connect(weft.port)), b"B")
        self.assertEqual(len(RELOAD_LINE.findall(read(one))), 2)
        self.assertNotIn("reload 2", weft.stderr())

    # error_log back to `stderr` returns to the stderr weft started with
    # (before, fd 2 stayed the dup2 of the file: the "(reload 2)" line
    # landed in it).
    def test_error_log_back_to_stderr(self):
        weft = self.start(CONF_A)
        one = os.path.join(self.dir, "one.log")
        self.assertReloaded(reload(weft, self.conf(one), log=one))
        sighup(weft, self.conf("stderr", "B"))
        self.assertTrue(wait_for(lambda: "reload 2" in weft.stderr() + read(one), RELOAD_BOUND))
        self.assertNotIn("reload 2", read(one))
        self.assertIn("reload 2", weft.stderr())


class Prober(threading.Thread):
    """New connections to `port` one after another, each asking for /body,
    until stopped: every one must be answered."""

    def __init__(self, port=None, connect=None):
        super().__init__(daemon=True)
        self.connect = connect or (lambda: Client(port, timeout=10.0))
        self.stop = threading.Event()
        self.answered = 0
        self.failures = []

    def run(self):
        deadline = time.monotonic() + LOAD_BOUND
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                c = self.connect()
                try:
                    c.send(get("/body", extra="Connection: close\r\n"))
                    r = c.response()
                    if r.status != 200 or r.body not in (b"A", b"B"):
                        self.failures.append(repr(r))
                    self.answered += 1
                finally:
                    c.close()
            except Exception as e:  # noqa: BLE001 - reported by the test
                self.failures.append(repr(e))

    def finish(self, test):
        # Some probes after the reload too.
        after = self.answered
        test.assertTrue(wait_for(lambda: self.answered >= after + 5 or self.failures,
                                 SWITCH_BOUND))
        self.stop.set()
        self.join(LOAD_BOUND)
        test.assertEqual(self.failures, [])
        test.assertGreater(self.answered, 5)


class UnixClient(Client):
    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.timeout, self.buf, self.eof = timeout, b"", False


def unix_refused(path):
    try:
        UnixClient(path, 1.0).close()
        return False
    except (ConnectionRefusedError, FileNotFoundError):
        return True
    except OSError:
        return False


class Listeners(ReloadTestCase):
    def probed_reload(self, weft, conf, connect=None, **ports):
        prober = Prober(weft.port, connect)
        prober.start()
        self.addCleanup(prober.stop.set)
        self.assertTrue(wait_for(lambda: prober.answered >= 5 or prober.failures, SWITCH_BOUND))
        self.assertEqual(prober.failures, [], "before the reload")
        line = reload(weft, conf, **ports)
        prober.finish(self)
        return line

    def test_added_answers_removed_refuses_kept_never_refuses(self):
        weft = self.start(CONF_A)
        second = free_port()
        both = site_conf("B", X_REDIRECT, listeners=("127.0.0.1:{port}", "127.0.0.1:{second}"))
        self.assertReloaded(self.probed_reload(weft, both, second=second))
        self.assertTrue(wait_for(lambda: answers(second), SWITCH_BOUND))
        # Accepted on the second listener: one idle after an answer, one in
        # the middle of its request head.
        idle = self.connect(second)
        self.assertSoon(lambda: body(idle), b"B")
        partial = self.connect(second)
        partial.send("GET /body HTTP/1.1\r\n")
        self.assertTrue(wait_for(lambda: weft_holds(weft, partial), SWITCH_BOUND))

        self.assertReloaded(self.probed_reload(weft, CONF_A))
        self.assertTrue(wait_for(lambda: refused(second), SWITCH_BOUND),
                        f"{second} still accepts after the reload that removed it")
        partial.send("Host: a\r\n\r\n")
        r = partial.response()
        self.assertIn((r.status, r.body), [(200, b"A"), (200, b"B")])
        self.assertSoon(lambda: body(idle), b"A")
        self.assertEqual(body(idle, "/x"), b"x-from-A")

        # Named again, it opens again.
        self.assertReloaded(self.probed_reload(weft, both, second=second))
        self.assertTrue(wait_for(lambda: answers(second), SWITCH_BOUND))
        self.assertSoon(lambda: body(self.connect(second)), b"B")

    def test_unix_listeners(self):
        a, b = os.path.join(self.dir, "a.sock"), os.path.join(self.dir, "b.sock")
        one = site_conf("A", X_RESPONSE, listeners=("127.0.0.1:{port}", "unix:{a}"))
        two = site_conf("B", X_REDIRECT, listeners=("127.0.0.1:{port}", "unix:{a}", "unix:{b}"))
        weft = Weft(self.dir, one.replace("{a}", a))
        self.addCleanup(self.stop, weft)
        # Weft() waited for the TCP listener; the unix one opens after it.
        self.assertTrue(wait_for(lambda: not unix_refused(a), SWITCH_BOUND))

        def on_a():
            return UnixClient(a)
        self.assertReloaded(self.probed_reload(weft, two, on_a, a=a, b=b))
        idle = UnixClient(b)
        self.addCleanup(idle.close)
        self.assertSoon(lambda: body(idle), b"B")
        self.assertReloaded(self.probed_reload(weft, one, on_a, a=a))
        self.assertTrue(wait_for(lambda: unix_refused(b), SWITCH_BOUND))
        self.assertSoon(lambda: body(idle), b"A")
        kept = on_a()
        self.addCleanup(kept.close)
        self.assertSoon(lambda: body(kept), b"A")


# --- PHP ---

# 20 lines of 1 KiB, one every 50 ms, each flushed out; after the tenth it
# waits for the test's MARK_DIR/release-ID (20 s at most).
SLOW_STREAM = b"""<?php
$id = preg_replace('/[^a-z0-9-]/', '', $_GET['id'] ?? '');
$dir = getenv('MARK_DIR');
while (ob_get_level()) ob_end_flush();
for ($i = 0; $i < 20; $i++) {
    echo str_pad("line $i ", 1023, "."), "\\n";
    flush();
    usleep(50000);
    for ($w = 0; $i == 9 && $w < 2000 && !file_exists("$dir/release-$id"); $w++) usleep(10000);
}
echo "end\\n";
"""
SLOW_STREAM_BODY = b"".join(f"line {i} ".ljust(1023, ".").encode() + b"\n"
                            for i in range(20)) + b"end\n"

# Holds its worker until the test says: leaves MARK_DIR/started-ID, waits
# for MARK_DIR/release-ID (20 s at most), answers ID.
HOLD = b"""<?php
$id = preg_replace('/[^a-z0-9-]/', '', $_GET['id'] ?? '');
$dir = getenv('MARK_DIR');
touch("$dir/started-$id");
for ($i = 0; $i < 2000 && !file_exists("$dir/release-$id"); $i++) usleep(10000);
echo $id;
"""

ECHO = b"""<?php
if (isset($_GET['ms'])) usleep((int)$_GET['ms'] * 1000);
echo $_GET['v'] ?? '';
"""


def php_conf(body, read_timeout="60s", max_conns=4, keepalive=4, threads=2, php=True):
    upstream = f"""\
upstream php {{
    server = unix:{{dir}}/php/php.sock
    keepalive = {keepalive}
    max_conns = {max_conns}
    keepalive_timeout = 60s
    connect_timeout = 5s
    read_timeout = {read_timeout}
    queue_timeout = 60s
}}
"""
    handler = """\
    fastcgi /php {
        upstream = php
    }
"""
    return f"""\
threads = {threads}
keep_alive_timeout = 60s
request_timeout = 30s
listener 127.0.0.1:{{port}}
{upstream if php else ""}site {{
    root = {{dir}}/www
    response /body {{
        body = {body}
    }}
{handler if php else ""}}}
"""


class PhpReloadTestCase(ReloadTestCase):
    CHILDREN = 4

    def setUp(self):
        require_php_fpm()
        super().setUp()
        write(os.path.join(self.dir, "www", "php", "slow.php"), SLOW_STREAM)
        write(os.path.join(self.dir, "www", "php", "echo.php"), ECHO)
        write(os.path.join(self.dir, "www", "php", "hold.php"), HOLD)
        self.marks = Marks(os.path.join(self.dir, "marks"))
        self.pool = PhpFpm(self.dir, "php", self.CHILDREN, env={"MARK_DIR": self.marks.dir})
        self.addCleanup(self.pool.stop)

    def held(self, weft, *ids):
        """Clients whose requests each hold a PHP worker (hold.php?id=ID),
        all at once."""
        clients = []
        for id in ids:
            c = self.connect(weft.port)
            c.send(get(f"/php/hold.php?id={id}"))
            self.marks.wait("started", id)
            clients.append(c)
        return clients


class StreamThroughReloads(PhpReloadTestCase):
    def test_a_streaming_response_ends_as_it_began(self):
        weft = self.start(php_conf("A"))
        c = self.connect(weft.port)
        c.send(get("/php/slow.php?id=s"))
        c.sock.settimeout(10.0)
        while b"line 1 " not in c.buf:
            c._fill()
        # The pool kept (its limits retuned), then no pool and no handler.
        self.assertReloaded(reload(weft, php_conf("B", read_timeout="50s", max_conns=3)))
        self.assertReloaded(reload(weft, php_conf("C", php=False)))
        self.assertSoon(lambda: body(self.connect(weft.port)), b"C")
        self.assertSoon(lambda: body(self.connect(weft.port), "/php/echo.php"), 404)
        self.assertNotIn(b"line 10 ", c.buf)
        self.marks.release("s")
        r = c.response()
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("transfer-encoding"), "chunked")
        self.assertEqual(r.body, SLOW_STREAM_BODY)
        # The pool no configuration names goes with the server that held it,
        # its connections closed.
        self.pool.wait_connections(lambda n: n == 0, SWITCH_BOUND, "none once the pool went")
        # The kept-alive connection serves C now; the pool comes back.
        self.assertSoon(lambda: body(c), b"C")
        self.assertReloaded(reload(weft, php_conf("A")))
        self.assertTrue(wait_for(lambda: body(c, "/php/echo.php?v=back") == b"back",
                                 SWITCH_BOUND))


def unix_socket_inodes(path=None, pid=None):
    """The inodes of the connected unix sockets: the pool's ends of
    connections to `path`, or those process `pid` holds."""
    with open("/proc/net/unix") as f:
        next(f)
        rows = [line.split() for line in f]
    if path is not None:
        return {r[6] for r in rows if len(r) > 7 and r[7] == path and r[5] == "03" and
                not int(r[3], 16) & 0x10000}
    connected = {r[6] for r in rows if len(r) > 6 and r[5] == "03"}
    held = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in connected:
            held.add(target[8:-1])
    return held


class PoolKept(PhpReloadTestCase):
    CHILDREN = 6
    CLIENTS = 5

    def test_max_conns_holds_through_reloads(self):
        weft = self.start(php_conf("A", max_conns=2, keepalive=2))
        socket_path = self.pool.socket
        stop = threading.Event()
        peak = {"pool": 0, "weft": 0}
        results = []
        in_flight = [0]
        lock = threading.Lock()

        def sample():
            while not stop.is_set():
                peak["pool"] = max(peak["pool"], backend_connections(socket_path))
                try:
                    peak["weft"] = max(peak["weft"],
                                       len(unix_socket_inodes(pid=weft.process.pid)))
                except OSError:
                    pass
                time.sleep(0.003)

        def client(n):
            deadline = time.monotonic() + LOAD_BOUND
            c = None
            i = 0
            while not stop.is_set() and time.monotonic() < deadline:
                v = f"c{n}-{i}"
                i += 1
                try:
                    if c is None or n % 2 == 0:  # odd clients keep their connection
                        if c:
                            c.close()
                        c = Client(weft.port, timeout=LOAD_BOUND)
                    with lock:
                        in_flight[0] += 1
                    c.send(get(f"/php/echo.php?v={v}&ms=150"))
                    r = c.response()
                    results.append((v, r.status, r.body))
                except Exception as e:  # noqa: BLE001 - reported by the test
                    results.append((v, None, repr(e)))
                    c = None
                finally:
                    with lock:
                        in_flight[0] -= 1
            if c:
                c.close()

        threads = [threading.Thread(target=sample, daemon=True)]
        threads += [threading.Thread(target=client, args=(n,), daemon=True)
                    for n in range(self.CLIENTS)]
        for t in threads:
            t.start()

        def finish():
            stop.set()
            for t in threads:
                t.join(LOAD_BOUND)
        self.addCleanup(finish)

        def more_answers(n):
            target = len(results) + n
            self.assertTrue(wait_for(lambda: len(results) >= target, SWITCH_BOUND),
                            f"{len(results)} answers")

        self.assertTrue(wait_for(lambda: in_flight[0] >= 4, SWITCH_BOUND), "the load did not start")
        more_answers(4)
        for conf in (php_conf("A", max_conns=2, keepalive=2),
                     php_conf("A", max_conns=2, keepalive=2),
                     php_conf("B", max_conns=2, keepalive=2),  # an unrelated body
                     php_conf("B", read_timeout="50s", max_conns=2, keepalive=2),
                     php_conf("A", max_conns=2, keepalive=2)):
            # Requests queue for the two connections as weft reloads.
            self.assertTrue(wait_for(lambda: in_flight[0] >= 3, SWITCH_BOUND))
            self.assertReloaded(reload(weft, conf))
            more_answers(6)
        finish()
        bad = [r for r in results if r[1:] != (200, r[0].encode())]
        self.assertEqual(bad, [])
        self.assertLessEqual(peak["weft"], 2, "weft held more backend connections than max_conns")
        self.assertLessEqual(peak["pool"], 2, "php-fpm saw more connections than max_conns")
        self.assertGreater(len(results), 30)


class IdleKept(PhpReloadTestCase):
    """One loop: a request always finds the loop's idle connections."""

    def test_idle_backend_connections_survive_a_reload(self):
        weft = self.start(php_conf("A", max_conns=2, keepalive=2, threads=1))
        # Two at once open two connections; both stay, idle.
        a, b = self.held(weft, "a", "b")
        self.marks.release("a")
        self.marks.release("b")
        self.assertEqual(a.response().body, b"a")
        self.assertEqual(b.response().body, b"b")
        self.pool.wait_connections(lambda n: n == 2, what="2 kept")
        pool_ends = unix_socket_inodes(path=self.pool.socket)
        weft_ends = unix_socket_inodes(pid=weft.process.pid)
        self.assertEqual((len(pool_ends), len(weft_ends)), (2, 2))

        self.assertReloaded(reload(weft, php_conf("B", max_conns=2, keepalive=2, threads=1)))
        self.assertSoon(lambda: body(a), b"B")
        for i in range(4):
            self.assertEqual(body(a, f"/php/echo.php?v=after{i}"), f"after{i}".encode())
        self.assertEqual(unix_socket_inodes(path=self.pool.socket), pool_ends)
        self.assertEqual(unix_socket_inodes(pid=weft.process.pid), weft_ends)


class PoolChanges(PhpReloadTestCase):
    """What a reload changes in a pool: its limits, its servers, whether a
    configuration names it at all."""
    CHILDREN = 6

    def load(self, weft, stop, results, clients=5, ms=150):
        """`clients` threads asking for echo.php on new connections until
        `stop`; (v, status, body) in `results`."""
        def client(n):
            deadline = time.monotonic() + LOAD_BOUND
            i = 0
            while not stop.is_set() and time.monotonic() < deadline:
                v = f"c{n}-{i}"
                i += 1
                try:
                    c = Client(weft.port, timeout=LOAD_BOUND)
                    try:
                        c.send(get(f"/php/echo.php?v={v}&ms={ms}"))
                        r = c.response()
                        results.append((v, r.status, r.body))
                    finally:
                        c.close()
                except Exception as e:  # noqa: BLE001 - reported by the test
                    results.append((v, None, repr(e)))
        threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
        for t in threads:
            t.start()
        return threads

    def test_max_conns_lowered_under_load(self):
        weft = self.start(php_conf("A", max_conns=4, keepalive=4))
        stop = threading.Event()
        results = []
        threads = self.load(weft, stop, results)
        def finish():
            stop.set()
            for t in threads:
                t.join(LOAD_BOUND)
        self.addCleanup(finish)
        self.assertTrue(wait_for(lambda: self.pool.connections() >= 3, SWITCH_BOUND))
        self.assertReloaded(reload(weft, php_conf("B", max_conns=2, keepalive=2)))
        # Once the requests begun before have ended (ten answers later), the
        # pool keeps 2 connections at most.
        n = len(results)
        self.assertTrue(wait_for(lambda: len(results) >= n + 10, SWITCH_BOUND))
        peak = 0
        n = len(results)
        deadline = time.monotonic() + 20
        while len(results) < n + 20 and time.monotonic() < deadline:
            peak = max(peak, len(unix_socket_inodes(pid=weft.process.pid)))
            time.sleep(0.003)
        finish()
        self.assertEqual([r for r in results if r[1:] != (200, r[0].encode())], [])
        self.assertLessEqual(peak, 2)

    def test_a_dropped_pool_closes_its_idle_connections_on_every_loop(self):
        weft = self.start(php_conf("A", max_conns=4, keepalive=4))
        stop = threading.Event()
        results = []
        threads = self.load(weft, stop, results, clients=6, ms=50)
        self.assertTrue(wait_for(lambda: len(results) >= 30, SWITCH_BOUND))
        stop.set()
        for t in threads:
            t.join(LOAD_BOUND)
        self.assertEqual([r for r in results if r[1:] != (200, r[0].encode())], [])
        self.assertReloaded(reload(weft, php_conf("C", php=False)))
        self.pool.wait_connections(lambda n: n == 0, SWITCH_BOUND, "none")
        self.assertEqual(len(unix_socket_inodes(pid=weft.process.pid)), 0)

    def test_a_queued_request_when_the_pool_is_dropped(self):
        weft = self.start(php_conf("A", max_conns=1, keepalive=1, threads=1))
        a, = self.held(weft, "qa")
        b = self.connect(weft.port)
        b.send(get("/php/hold.php?id=qb"))
        # Accepted, then a round trip on the one loop: b has queued.
        self.assertTrue(wait_for(lambda: weft_holds(weft, b), SWITCH_BOUND))
        self.assertEqual(body(self.connect(weft.port)), b"A")
        self.assertReloaded(reload(weft, php_conf("C", php=False, threads=1)))
        self.assertSoon(lambda: body(self.connect(weft.port)), b"C")
        self.assertEqual(body(self.connect(weft.port), "/php/hold.php?id=new"), 404)
        self.assertFalse(self.marks.exists("started", "qb"), "max_conns = 1 let b through")
        self.marks.release("qa")
        self.assertEqual(a.response().body, b"qa")
        self.marks.wait("started", "qb")
        self.marks.release("qb")
        self.assertEqual(b.response().body, b"qb")
        self.pool.wait_connections(lambda n: n == 0, SWITCH_BOUND, "none")

    # A raised max_conns lets queued requests in at the reload (before,
    # they waited for a connection to free while one long request held
    # the only slot).
    def test_a_raised_max_conns_lets_the_queue_go(self):
        weft = self.start(php_conf("A", max_conns=1, keepalive=1, threads=1))
        self.addCleanup(self.marks.release, "ra")
        self.addCleanup(self.marks.release, "rb")
        a, = self.held(weft, "ra")
        b = self.connect(weft.port)
        b.send(get("/php/hold.php?id=rb"))
        self.assertTrue(wait_for(lambda: weft_holds(weft, b), SWITCH_BOUND))
        self.assertEqual(body(self.connect(weft.port)), b"A")
        self.assertFalse(self.marks.exists("started", "rb"), "max_conns = 1 let b through")
        self.assertReloaded(reload(weft, php_conf("B", max_conns=2, keepalive=2, threads=1)))
        self.assertTrue(wait_for(lambda: self.marks.exists("started", "rb"), SWITCH_BOUND),
                        "the queued request still waits with max_conns = 2")

    def test_servers_changed_under_the_same_name(self):
        other = PhpFpm(self.dir, "other", 2)
        self.addCleanup(other.stop)
        weft = self.start(php_conf("A"))
        c = self.connect(weft.port)
        self.assertEqual(body(c, "/php/echo.php?v=1"), b"1")
        self.pool.wait_connections(lambda n: n == 1)
        moved = php_conf("B").replace("/php/php.sock", "/other/php.sock")
        self.assertReloaded(reload(weft, moved))
        self.assertSoon(lambda: body(c), b"B")
        self.assertEqual(body(c, "/php/echo.php?v=2"), b"2")
        other.wait_connections(lambda n: n == 1)
        self.pool.wait_connections(lambda n: n == 0, SWITCH_BOUND, "none")


# --- systemd, the command line, what only a restart changes ---

class Notify(ReloadTestCase):
    def setUp(self):
        super().setUp()
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(self.notify.close)
        self.notify_path = os.path.join(self.dir, "notify")
        self.notify.bind(self.notify_path)
        self.notify.settimeout(RELOAD_BOUND)

    def message(self):
        text = self.notify.recv(4096).decode()
        return dict(line.split("=", 1) for line in text.split("\n") if "=" in line)

    def sighup_states(self, weft, conf):
        """The two messages a reload sends, and the monotonic clock in µs
        before the SIGHUP and after the first message."""
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        line = reload(weft, conf)
        reloading = self.message()
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        ready = self.message()
        return line, reloading, ready, before, after

    def test_reloading_then_ready_also_when_the_file_is_bad(self):
        with environment(NOTIFY_SOCKET=self.notify_path):
            weft = self.start(CONF_A)
        self.assertEqual(self.message().get("READY"), "1")

        line, reloading, ready, before, after = self.sighup_states(weft, CONF_B)
        self.assertReloaded(line)
        self.assertEqual(reloading.get("RELOADING"), "1", reloading)
        self.assertTrue(before <= int(reloading["MONOTONIC_USEC"]) <= after, reloading)
        self.assertEqual(ready.get("READY"), "1", ready)
        self.assertIn("1 reloads", ready.get("STATUS", ""))

        line, reloading, ready, before, after = self.sighup_states(weft, "site {")
        self.assertRefusedReload(line, weft.conf_path)
        self.assertEqual(reloading.get("RELOADING"), "1", reloading)
        self.assertTrue(before <= int(reloading["MONOTONIC_USEC"]) <= after, reloading)
        self.assertEqual(ready.get("READY"), "1", ready)
        self.assertIn("1 reloads", ready.get("STATUS", ""))
        self.assertSoon(lambda: body(self.connect(weft.port)), b"B")


@unittest.skipUnless(ACTIVATE, "systemd-socket-activate (Debian's systemd package)")
class SocketActivation(ReloadTestCase):
    def test_a_passed_listener_is_kept_dropped_and_named_again(self):
        passed, own = free_port(), free_port()
        listeners = ("127.0.0.1:{port}", "127.0.0.1:{own}")
        conf = os.path.join(self.dir, "weft.conf")
        write(conf, conf_text(site_conf("A", X_RESPONSE, listeners=listeners), self.dir, passed,
                              own=own))
        # systemd-socket-activate listens on `passed` and execs weft (same
        # pid) with it on the first connection; a Weft's methods without
        # its start.
        weft = Weft.__new__(Weft)
        weft.dir, weft.port, weft.conf_path = self.dir, passed, conf
        weft.out_path = os.path.join(self.dir, "weft.stdout")
        weft.err_path = os.path.join(self.dir, "weft.stderr")
        with open(weft.out_path, "wb") as out, open(weft.err_path, "wb") as err:
            weft.process = subprocess.Popen(
                [ACTIVATE, "-l", f"127.0.0.1:{passed}", WEFT, "-c", conf], stdout=out,
                stderr=err, stdin=subprocess.DEVNULL)
        self.addCleanup(self.stop, weft)
        self.assertTrue(wait_for(lambda: weft.process.poll() is not None or
                                 "Listening on" in read(weft.err_path), SWITCH_BOUND),
                        read(weft.err_path))
        self.assertEqual(body(self.connect(passed)), b"A")
        self.assertTrue(wait_for(lambda: answers(own), SWITCH_BOUND))

        prober = Prober(passed)
        prober.start()
        self.addCleanup(prober.stop.set)
        self.assertReloaded(reload(weft, site_conf("B", X_RESPONSE, listeners=listeners),
                                   own=own))
        prober.finish(self)
        self.assertSoon(lambda: body(self.connect(passed)), b"B")
        # Dropped, then named again: the socket systemd passed serves again.
        self.assertReloaded(reload(weft, site_conf("C", X_RESPONSE,
                                                   listeners=("127.0.0.1:{own}",)), own=own))
        self.assertTrue(wait_for(lambda: body(self.connect(own)) == b"C", SWITCH_BOUND))
        self.assertReloaded(reload(weft, site_conf("D", X_RESPONSE, listeners=listeners),
                                   own=own))
        self.assertTrue(wait_for(lambda: body(self.connect(passed)) == b"D", SWITCH_BOUND))
        self.assertEqual(read(weft.out_path).count(f"127.0.0.1:{passed}: the socket systemd "
                                                   "passed (fd 3)"), 2)


class NothingToReread(ReloadTestCase):
    def test_without_a_file_sighup_keeps_serving(self):
        port = free_port()
        write(os.path.join(self.dir, "www", "index.html"), "hello\n")
        weft = self.start(args=["--listen", f"127.0.0.1:{port}", "--root",
                                os.path.join(self.dir, "www")], port=port)
        kept = self.connect(port)
        self.assertEqual(body(kept, "/index.html"), b"hello\n")
        line = reload(weft)
        self.assertRefusedReload(line, "started without -c, there is no file to re-read")
        self.assertEqual(body(kept, "/index.html"), b"hello\n")
        self.assertEqual(body(self.connect(port), "/index.html"), b"hello\n")


class StartOnly(ReloadTestCase):
    def test_threads_and_user_change_only_at_a_restart(self):
        weft = self.start(CONF_A)
        kept = self.connect(weft.port)
        self.assertEqual(body(kept), b"A")
        for conf, why in [(site_conf("B", X_REDIRECT, threads=1), "threads"),
                          (site_conf("B", X_REDIRECT, head="user = nobody"), "user"),
                          (site_conf("B", X_REDIRECT, head="user = nobody", threads=3),
                           "threads, user")]:
            line = reload(weft, conf)
            self.assertRefusedReload(line, f"{why} change only at a restart")
            self.assertEqual(body(kept), b"A")
            self.assertEqual(body(self.connect(weft.port)), b"A")
        self.assertReloaded(reload(weft, CONF_B))
        self.assertSoon(lambda: body(kept), b"B")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
