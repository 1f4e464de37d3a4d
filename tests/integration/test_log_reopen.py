#!/usr/bin/env python3
"""SIGUSR1 reopens the access log and the error log (logrotate's postrotate):

- under a bounded load (4 keep-alive clients, 3,000 requests) both logs are
  rotated by rename + SIGUSR1 five times: every request is in exactly one
  of the access logs, every error line (a fastcgi handler whose socket does
  not exist logs one a request) in one of the error logs;
- a reopen that fails (the log directory's path is now a regular file)
  keeps both logs on their old files and says why there.

    test_log_reopen.py WEFT_BINARY
"""
import http.client
import os
import signal
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, read, wait_for  # noqa: E402

CONF = """\
threads = 2
access_log = {dir}/logs/access.log
error_log = {dir}/logs/error.log
listener 127.0.0.1:{port}
upstream gone {
    server = unix:{dir}/no-such.sock
}
site {
    root = {dir}/www
    fastcgi /php {
        upstream = gone
    }
    files / {
    }
}
"""

CLIENTS = 4
PER_CLIENT = 750
ERRORS = 100
ROTATIONS = 5


class LogReopen(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        os.makedirs(os.path.join(d, "www"))
        os.makedirs(os.path.join(d, "logs"))
        with open(os.path.join(d, "www", "a.txt"), "w") as f:
            f.write("a\n")
        os.makedirs(os.path.join(d, "www", "php"))
        for name in ("x.php", "y.php"):
            with open(os.path.join(d, "www", "php", name), "w") as f:
                f.write("<?php echo 1;\n")

    def logs(self, name):
        """The text of every file in logs/ (and logs.old/) whose name starts with `name`."""
        text = ""
        for sub in ("logs", "logs.old"):
            d = os.path.join(self.dir, sub)
            if not os.path.isdir(d):
                continue
            for f in sorted(os.listdir(d)):
                if f.startswith(name):
                    with open(os.path.join(d, f), errors="replace") as fh:
                        text += fh.read()
        return text

    done = {}

    def client(self, prefix, count, path, failures):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            for i in range(count):
                conn.request("GET", f"{path}?{prefix}-{i}-end")
                r = conn.getresponse()
                r.read()
                self.done[prefix] = i + 1  # each client its own key
                if r.will_close:
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        except Exception as e:  # noqa: BLE001 (reported by the test)
            failures.append(f"{prefix}: {e!r}")
        finally:
            conn.close()

    def test_1_rotating_both_logs_under_load_loses_no_line(self):
        logs = os.path.join(self.dir, "logs")
        failures = []
        threads = [threading.Thread(target=self.client, args=(f"c{c}", PER_CLIENT, "/a.txt",
                                                               failures))
                   for c in range(CLIENTS)]
        threads.append(threading.Thread(target=self.client,
                                        args=("e", ERRORS, "/php/x.php", failures)))
        for t in threads:
            t.start()
        total = CLIENTS * PER_CLIENT
        for k in range(ROTATIONS):
            # Rotated at points along the load, so every file gets lines.
            self.assertTrue(wait_for(lambda: sum(self.done.values()) >= (k + 1) * total // (ROTATIONS + 1),
                                     30.0), f"the load stalled before rotation {k}")
            os.rename(os.path.join(logs, "access.log"), os.path.join(logs, f"access.log.{k}"))
            os.rename(os.path.join(logs, "error.log"), os.path.join(logs, f"error.log.{k}"))
            self.weft.process.send_signal(signal.SIGUSR1)
            self.assertTrue(wait_for(lambda: os.path.exists(os.path.join(logs, "access.log"))
                                     and os.path.exists(os.path.join(logs, "error.log"))),
                            f"rotation {k}: logs not reopened")
        for t in threads:
            t.join(60)
        self.assertEqual(failures, [])
        # A second after its first line, a loop's buffer is written out.
        expected = CLIENTS * PER_CLIENT + ERRORS

        def all_logged():
            return self.logs("access.log").count("-end HTTP/1.1") >= expected
        wait_for(all_logged, 5.0)
        access = self.logs("access.log")
        for c in range(CLIENTS):
            for i in range(PER_CLIENT):
                self.assertEqual(access.count(f"?c{c}-{i}-end "), 1, f"c{c}-{i}")
        self.assertEqual(access.count("\n"), expected)
        errors = self.logs("error.log")
        for i in range(ERRORS):
            self.assertIn(f"?e-{i}-end", errors, f"error line e-{i}")
        # Each rotated file got lines: the reopen took effect every time.
        for k in range(ROTATIONS):
            with open(os.path.join(logs, f"access.log.{k}")) as f:
                self.assertNotEqual(f.read(), "", f"access.log.{k}")
        with open(os.path.join(logs, "access.log")) as f:
            self.assertNotEqual(f.read(), "", "access.log after the last rotation")

    def test_2_a_failed_reopen_keeps_the_old_files(self):
        logs = os.path.join(self.dir, "logs")
        old = os.path.join(self.dir, "logs.old")
        os.rename(logs, old)
        with open(logs, "w") as f:  # the logs' parent is now a regular file
            f.write("not a directory\n")
        self.weft.process.send_signal(signal.SIGUSR1)
        self.assertTrue(wait_for(lambda: "SIGUSR1" in read(os.path.join(old, "error.log"))),
                        "no line says why the reopen failed")
        errors = read(os.path.join(old, "error.log"))
        self.assertEqual(errors.count("cannot reopen access log"), 1, errors)
        self.assertEqual(errors.count("cannot open error log"), 1, errors)
        self.assertIn("Not a directory", errors)
        failures = []
        self.client("late", 5, "/a.txt", failures)
        self.client("late-e", 1, "/php/y.php", failures)
        self.assertEqual(failures, [])
        self.assertTrue(wait_for(lambda: read(os.path.join(old, "access.log"))
                                 .count("?late-") == 6, 5.0),
                        "the access log stopped after a failed reopen")
        self.assertIn("?late-e-0-end", read(os.path.join(old, "error.log")))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
