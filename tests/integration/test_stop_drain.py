#!/usr/bin/env python3
"""Stopping: SIGTERM drains (drain_delay, then shutdown_timeout for the
requests running), a second SIGTERM or a SIGQUIT stops at once. Slow
requests are PHP scripts held by the test (hold.php) on a real php-fpm8.2;
STOPPING=1 goes to a datagram socket of the test's own as NOTIFY_SOCKET.

    test_stop_drain.py WEFT_BINARY
"""
import os
import signal
import socket
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Client, Closed, Weft, get, port_is_free  # noqa: E402
from php_support import Marks, PhpFpm, install_fixtures, require_php_fpm  # noqa: E402

CONF = """\
threads = 2
{keys}
listener 127.0.0.1:{{port}}
upstream php {{
    server = unix:{pool}
    max_conns = 4
    read_timeout = 30s
}}
site {{
    root = {www}
    files /static/ {{
    }}
    fastcgi /hold.php {{
        upstream = php
    }}
}}
"""


class StopTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_php_fpm()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.realpath(cls.tmp.name)
        cls.www = os.path.join(cls.dir, "www")
        install_fixtures(cls.www, {"hold.php": "hold.php", "static/a.txt": b"static\n"})
        cls.marks = Marks(os.path.join(cls.dir, "marks"))
        try:
            cls.pool = PhpFpm(cls.dir, "php", 4, env={"MARK_DIR": cls.marks.dir})
        except BaseException:
            cls.tmp.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.pool.stop()
        finally:
            cls.tmp.cleanup()

    def setUp(self):
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(self.notify.close)
        self.notify_path = os.path.join(self.dir, f"notify-{self.id().rsplit('.', 1)[1]}")
        self.notify.bind(self.notify_path)
        self.addCleanup(os.unlink, self.notify_path)

    def start(self, keys):
        dir = os.path.join(self.dir, self.id().rsplit(".", 1)[1])
        os.makedirs(dir)
        conf = CONF.format(keys=keys, pool=self.pool.socket, www=self.www)
        saved = os.environ.get("NOTIFY_SOCKET")
        os.environ["NOTIFY_SOCKET"] = self.notify_path
        try:
            weft = Weft(dir, conf)
        finally:
            if saved is None:
                del os.environ["NOTIFY_SOCKET"]
            else:
                os.environ["NOTIFY_SOCKET"] = saved
        self.addCleanup(weft.kill)
        self.assertIn("READY=1", self.state(10))
        return weft

    def state(self, timeout):
        """The next sd_notify datagram's lines, within `timeout` s."""
        self.notify.settimeout(timeout)
        return self.notify.recv(4096).decode().split("\n")

    def hold(self, weft, id):
        """A request for hold.php?id=ID, running in PHP when this returns."""
        client = Client(weft.port, timeout=30)
        self.addCleanup(client.close)
        self.addCleanup(self.marks.release, id)  # the worker goes free in the end
        client.send(get(f"/hold.php?id={id}"))
        self.marks.wait("started", id)
        return client

    def assertCut(self, client):
        with self.assertRaises(Closed):
            client.response()

    def assertExitsWithin(self, weft, seconds):
        """weft exits 0 within `seconds` (a bound, not a measurement)."""
        self.assertEqual(weft.wait(timeout=seconds), 0, weft.stderr())
        self.assertTrue(port_is_free(weft.port))


class ShutdownTimeout(StopTestCase):
    def test_a_longer_request_is_cut_a_shorter_one_finishes(self):
        weft = self.start("shutdown_timeout = 2s")
        short = self.hold(weft, "timeout-short")
        long = self.hold(weft, "timeout-long")
        weft.terminate()
        self.assertIn("STOPPING=1", self.state(5))
        time.sleep(0.3)
        self.marks.release("timeout-short")
        r = short.response()
        self.assertEqual((r.status, r.body), (200, b"late timeout-short\n"))
        self.assertEqual(r.header("connection"), "close")
        # Cut at 2 s, long before the 10 s default or the script's end.
        self.assertCut(long)
        self.assertExitsWithin(weft, 8)
        self.assertFalse(self.marks.exists("done", "timeout-long"))


class DrainDelay(StopTestCase):
    def test_serves_on_for_the_delay_then_stops(self):
        weft = self.start("drain_delay = 3s")
        kept = Client(weft.port)
        self.addCleanup(kept.close)
        kept.send(get("/static/a.txt"))
        self.assertIsNone(kept.response().header("connection"))
        weft.terminate()
        # systemd hears of the stop at once, as a load balancer would ...
        self.assertIn("STOPPING=1", self.state(2))
        # ... while new connections are still accepted and answered, each
        # response closing its connection (clients go elsewhere next time).
        # The loops hear of the drain through a post, which a loop starved
        # of CPU may run a moment after the datagram went: the first few
        # answers, within a second, may still keep their connection.
        closing = 0
        for attempt in range(12):
            client = Client(weft.port)
            self.addCleanup(client.close)
            client.send(get("/static/a.txt"))
            r = client.response()
            self.assertEqual((r.status, r.body), (200, b"static\n"))
            if r.header("connection") == "close":
                self.assertEqual(client.rest_until_close(), b"")
                closing += 1
            else:
                self.assertEqual(closing, 0, "a response kept its connection after one closed")
                self.assertLess(attempt, 4)
            if closing == 4:
                break
            time.sleep(0.25)
        self.assertEqual(closing, 4)
        self.assertIsNone(weft.process.poll())
        kept.send(get("/static/a.txt"))
        r = kept.response()
        self.assertEqual((r.status, r.header("connection")), (200, "close"))
        self.assertEqual(kept.rest_until_close(), b"")
        self.assertExitsWithin(weft, 10)

    def test_a_request_running_at_the_end_of_the_delay_finishes(self):
        weft = self.start("drain_delay = 1s\nshutdown_timeout = 20s")
        weft.terminate()
        self.assertIn("STOPPING=1", self.state(2))
        slow = self.hold(weft, "drain-slow")  # started during the delay
        time.sleep(1.5)  # the delay is over: the graceful stop proper runs
        self.assertIsNone(weft.process.poll())
        self.marks.release("drain-slow")
        r = slow.response()
        self.assertEqual((r.status, r.body), (200, b"late drain-slow\n"))
        self.assertExitsWithin(weft, 10)

    def test_a_second_sigterm_in_the_delay_stops_at_once(self):
        weft = self.start("drain_delay = 60s")
        slow = self.hold(weft, "drain-second")
        weft.terminate()
        self.assertIn("STOPPING=1", self.state(2))
        time.sleep(0.3)
        weft.terminate()
        self.assertCut(slow)
        self.assertExitsWithin(weft, 8)


class Quit(StopTestCase):
    def test_sigquit_stops_at_once_with_a_request_running(self):
        weft = self.start("shutdown_timeout = 60s")
        slow = self.hold(weft, "quit")
        weft.process.send_signal(signal.SIGQUIT)
        self.assertIn("STOPPING=1", self.state(5))
        self.assertCut(slow)
        self.assertExitsWithin(weft, 8)
        self.assertFalse(self.marks.exists("done", "quit"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
