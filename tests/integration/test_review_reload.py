"""SIGHUP reload, as attacked: what a reload must never do to a request in
flight (a pipelined request dropped), to a listener named again at once,
and what a stop raced with reloads did to requests queued for PHP.

Usage: test_review_reload.py /path/to/weft
"""
import os
import signal
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import (Client, ServerTestCase, Weft, answers, wait_for, write)  # noqa: E402
from php_support import PhpFpm, require_php_fpm, unix_accepts  # noqa: E402

RECEIVE_BUFFER = 20 * 1024  # src/lib/http/receive_buffer.hpp's kSize
BIG = 16 * 1024 * 1024      # more than loopback's socket buffers hold

CONF = """\
threads = 1
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files / {
    }
}
"""


def padded_get(path, length, extra=""):
    """A GET of exactly `length` bytes (an X-Pad header fills it)."""
    bare = f"GET {path} HTTP/1.1\r\nHost: a\r\n{extra}X-Pad: \r\n\r\n"
    return bare.replace("X-Pad: ", "X-Pad: " + "p" * (length - len(bare)))


class PipelinedAcrossReload(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        write(os.path.join(d, "www", "small.txt"), "s\n")
        write(os.path.join(d, "www", "big.bin"), b"b" * BIG)

    def reload(self, count):
        self.weft.process.send_signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: f"(reload {count})" in self.weft.stderr(), 10),
                        self.weft.stderr())

    def test_a_full_buffer_of_pipelined_requests_moves_to_the_new_server(self):
        # The connection's coroutine sends a big file while the reload comes;
        # its next read then fills the receive buffer exactly with pipelined
        # requests. They moved to the new server as a parked head, which holds
        # less than a full buffer: the connection was closed with all of them
        # unanswered (40 requests lost, the client saw EOF).
        per = RECEIVE_BUFFER // 40
        first = padded_get("/small.txt", per) * 39 + padded_get("/big.bin", per)
        second = padded_get("/small.txt", per) * 40
        last = padded_get("/small.txt", 100, "Connection: close\r\n")
        self.assertEqual(len(first), RECEIVE_BUFFER)
        self.assertEqual(len(second), RECEIVE_BUFFER)
        c = Client(self.port, timeout=10)
        self.addCleanup(c.close)
        c.send(first)  # read whole: the big file's answer blocks on our window
        c.sock.settimeout(2)
        c._fill()  # the first answers came: every request of `first` was read
        c.sock.settimeout(10)
        c.send(second + last)
        self.reload(1)
        answered = 0
        for i in range(39 + 1 + 40 + 1):
            r = c.response()
            self.assertEqual(r.status, 200, f"response {i}")
            self.assertEqual(len(r.body), BIG if i == 39 else 2, f"response {i}")
            answered += 1
        self.assertEqual(answered, 81)
        self.assertEqual(c.rest_until_close(5), b"")


class UnixListenerBackAtOnce(ServerTestCase):
    """A reload drops a unix listener and the next names it again while the
    loops are still letting go of the old socket (its file was removed only
    once they had): the path still answered, so the reload was refused as
    "another server is listening" (7 of 100 reloads in a storm of 200)."""

    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        write(os.path.join(d, "www", "small.txt"), "s\n")

    def conf(self, unix, access_log="off"):
        text = CONF.replace("{port}", str(self.port)).replace("{dir}", self.dir)
        text = text.replace("listener ", f"access_log = {access_log}\nlistener ", 1)
        if unix:
            text = text.replace("site {", f"listener unix:{self.sock}\nsite {{", 1)
        write(self.weft.conf_path + ".new", text)
        os.rename(self.weft.conf_path + ".new", self.weft.conf_path)

    def test_a_unix_listener_dropped_and_named_again_in_one_turn(self):
        self.sock = os.path.join(self.dir, "a.sock")
        fifo = os.path.join(self.dir, "access.fifo")
        os.mkfifo(fifo)
        self.conf(unix=True)
        self.weft.process.send_signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: unix_accepts(self.sock), 10), self.weft.stderr())
        # Reload 1 drops the unix listener; opening its access log (a FIFO
        # nobody reads yet) holds run()'s thread until we read, while SIGHUP
        # 2 comes for a file that names the listener again: the two reloads
        # then run in one turn, before the old socket's close has come back.
        self.conf(unix=False, access_log=fifo)
        self.weft.process.send_signal(signal.SIGHUP)
        time.sleep(0.5)  # reload 1 read the file and waits on the FIFO
        self.conf(unix=True)
        self.weft.process.send_signal(signal.SIGHUP)
        time.sleep(0.2)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.addCleanup(os.close, reader)
        self.assertTrue(wait_for(lambda: "(reload 3)" in self.weft.stderr()
                                 or "reload:" in self.weft.stderr(), 10), self.weft.stderr())
        self.assertNotIn("reload:", self.weft.stderr())
        self.assertTrue(wait_for(lambda: unix_accepts(self.sock), 5), self.weft.stderr())
        self.assertTrue(answers(self.port))


class SecondStopWhileRequestsQueue(unittest.TestCase):
    """A second SIGTERM (stop now) destroys the coroutines: one waiting in
    an upstream's queue unwound without leaving it, and the request ahead
    of it, unwinding in turn, handed its connection to that stack (ASan:
    SEGV in Upstream::unlink_waiter; UBSan: a TriggerEvent at a misaligned
    address; found racing SIGHUP with SIGTERM, 3 runs in 6)."""

    def test_the_queue_is_left_when_a_stop_ends_the_wait(self):
        require_php_fpm()
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        d = os.path.realpath(tmp.name)
        write(os.path.join(d, "www", "slow.php"), "<?php sleep(3); echo 'x';\n")
        fpm = PhpFpm(d, children=2)
        self.addCleanup(fpm.stop)
        conf = (f"threads = 1\nlistener 127.0.0.1:{{port}}\n"
                f"upstream php {{\n    server = unix:{fpm.socket}\n    max_conns = 1\n}}\n"
                f"site {{\n    root = {d}/www\n    fastcgi / {{\n        upstream = php\n"
                f"    }}\n}}\n")
        weft = Weft(d, conf)
        self.addCleanup(weft.kill)
        clients = []
        for _ in range(3):
            c = Client(weft.port, timeout=10)
            self.addCleanup(c.close)
            c.send("GET /slow.php HTTP/1.1\r\nHost: a\r\n\r\n")
            clients.append(c)
        # One request runs in PHP, two wait for the pool's one connection.
        fpm.wait_connections(lambda n: n == 1, what="the first request in PHP")
        time.sleep(0.3)
        weft.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        weft.process.send_signal(signal.SIGTERM)
        self.assertEqual(weft.wait(), 0, weft.stderr())
        self.assertNotIn("Sanitizer", weft.stderr())
        self.assertNotIn("runtime error", weft.stderr())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
