#!/usr/bin/env python3
"""systemd's service protocol, without a running systemd: a datagram socket of
the test's own as NOTIFY_SOCKET (READY=1 once listening, STOPPING=1 on
SIGTERM, WATCHDOG=1 while the loops turn), and socket activation through
Debian's systemd-socket-activate.

    test_systemd.py WEFT_BINARY
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import WEFT, answers, free_port  # noqa: E402

ACTIVATE = shutil.which("systemd-socket-activate")


def config(directory, *listeners, threads=2):
    root = os.path.join(directory, "www")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("hello from weft\n")
    path = os.path.join(directory, "weft.conf")
    with open(path, "w") as f:
        f.write(f"threads = {threads}\n")
        for listener in listeners:
            f.write(f"listener {listener}\n")
        f.write("site {\n    root = %s\n    files / {\n        index = index.html\n    }\n}\n" % root)
    return path


def listening_sockets(port):
    """How many TCP sockets listen on `port` (state 0A in /proc/net/tcp)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


def stop(process):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Notify(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="weft-systemd-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(self.notify.close)
        self.notify_path = os.path.join(self.dir, "notify")
        self.notify.bind(self.notify_path)

    def start(self, port, **extra):
        env = dict(os.environ, NOTIFY_SOCKET=self.notify_path, **extra)
        process = subprocess.Popen([WEFT, "-c", config(self.dir, f"127.0.0.1:{port}")], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (stop(process), process.stderr.close()))
        return process

    def messages(self, timeout):
        """The datagrams that arrive within `timeout` seconds, until one comes."""
        self.notify.settimeout(timeout)
        return self.notify.recv(4096).decode().split("\n")

    def test_ready_once_listening_then_stopping_on_sigterm(self):
        port = free_port()
        process = self.start(port)
        state = self.messages(10)
        self.assertIn("READY=1", state)
        # READY means every loop listens: the port answers now, not later.
        self.assertTrue(answers(port))
        self.assertIn("STATUS=serving 2 loops on 127.0.0.1:%d" % port, state)
        process.send_signal(signal.SIGTERM)
        self.assertIn("STOPPING=1", self.messages(10))
        self.assertEqual(process.wait(timeout=10), 0)

    def test_watchdog_while_the_loops_turn(self):
        port = free_port()
        self.start(port, WATCHDOG_USEC="400000")
        self.assertIn("READY=1", self.messages(10))
        beats = 0
        deadline = time.monotonic() + 10
        while beats < 2 and time.monotonic() < deadline:
            if "WATCHDOG=1" in self.messages(10):
                beats += 1
        self.assertEqual(beats, 2)

    def test_no_watchdog_for_another_pid(self):
        port = free_port()
        self.start(port, WATCHDOG_USEC="400000", WATCHDOG_PID="1")
        self.assertIn("READY=1", self.messages(10))
        with self.assertRaises(socket.timeout):
            self.messages(1.5)

    def test_abstract_notify_socket(self):
        abstract = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(abstract.close)
        name = "weft-test-%d" % os.getpid()
        abstract.bind("\0" + name)
        abstract.settimeout(10)
        port = free_port()
        env = dict(os.environ, NOTIFY_SOCKET="@" + name)
        process = subprocess.Popen([WEFT, "--listen", f"127.0.0.1:{port}", "--root", self.dir],
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(stop, process)
        self.assertIn("READY=1", abstract.recv(4096).decode().split("\n"))


@unittest.skipUnless(ACTIVATE, "systemd-socket-activate (Debian's systemd package)")
class SocketActivation(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="weft-systemd-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def activate(self, port, conf, *options):
        # systemd-socket-activate listens, then execs weft on the first
        # connection with LISTEN_FDS=1 and LISTEN_PID set to that pid.
        process = subprocess.Popen([ACTIVATE, *options, "-l", f"127.0.0.1:{port}", WEFT, "-c",
                                    conf], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        self.addCleanup(lambda: (stop(process), process.stdout.close(), process.stderr.close()))
        deadline = time.monotonic() + 10
        while not options and listening_sockets(port) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        return process

    def test_the_passed_socket_serves_and_weft_binds_nothing(self):
        port = free_port()
        other = free_port()
        process = self.activate(port, config(self.dir, f"127.0.0.1:{port}", f"127.0.0.1:{other}"))
        # The first request is what starts weft; it waits in the backlog.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            reply = b""
            while chunk := s.recv(4096):
                reply += chunk
        self.assertTrue(reply.startswith(b"HTTP/1.1 200"), reply[:100])
        self.assertIn(b"hello from weft", reply)
        # Two loops share the one passed socket: no SO_REUSEPORT twin.
        self.assertEqual(listening_sockets(port), 1)
        # The listener systemd did not pass is opened as usual, per loop.
        self.assertTrue(answers(other))
        self.assertEqual(listening_sockets(other), 2)
        stop(process)
        self.assertIn(f"127.0.0.1:{port}: the socket systemd passed (fd 3)",
                      process.stdout.read())
        self.assertEqual(process.returncode, 0)

    def test_a_passed_socket_no_listener_names_is_an_error(self):
        port = free_port()
        configured = free_port()
        process = self.activate(port, config(self.dir, f"127.0.0.1:{configured}"))
        # A connection is what starts weft; knocked again until it has exited
        # (one CI run waited 10 s for a start that never came). A weft that
        # does not exit still fails here.
        deadline = time.monotonic() + 10
        while process.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
            except OSError:
                pass
            time.sleep(0.2)
        self.assertEqual(process.wait(timeout=1), 1)
        error = process.stderr.read()
        self.assertIn(f"listens on 127.0.0.1:{port}, which no listener in the configuration names",
                      error)
        self.assertEqual(listening_sockets(configured), 0)

    def test_a_passed_datagram_socket_is_an_error(self):
        port = free_port()
        process = self.activate(port, config(self.dir, f"127.0.0.1:{port}"), "--datagram")
        deadline = time.monotonic() + 10
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            while process.poll() is None and time.monotonic() < deadline:
                udp.sendto(b"x", ("127.0.0.1", port))
                time.sleep(0.1)
        self.assertEqual(process.wait(timeout=10), 1)
        self.assertIn(f"fd 3 on 127.0.0.1:{port} is not a listening stream socket",
                      process.stderr.read())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
