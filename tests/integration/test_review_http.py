#!/usr/bin/env python3
"""Findings of a hostile review of the HTTP side and static files, each a
test that fails on the code reviewed (42ea49c).

    test_review_http.py WEFT_BINARY
"""
import mmap
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, get  # noqa: E402

CONF = """\
threads = 1
request_timeout = 2s
keep_alive_timeout = 2s
listener 127.0.0.1:{port}
site {
    root = {dir}/root
    files / {
        index = index.html
        precompressed = on
    }
}
"""


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


class Review(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        write(f"{d}/root/index.html", b"home\n")
        write(f"{d}/root/x.php", b"<?php $password = 'hunter2';\n")
        write(f"{d}/root/x.php.gz", b"<?php $password = 'hunter2'; (gzip -k)\n")
        write(f"{d}/elsewhere/page.html", b"version one\n")
        os.link(f"{d}/elsewhere/page.html", f"{d}/root/page.html")

    def body(self, path):
        c, r = self.roundtrip(get(path))
        return r.status, r.body

    def test_a_php_source_is_not_served_through_its_precompressed_twin(self):
        # `gzip -k` over a tree for precompressed = on leaves x.php.gz beside
        # x.php; /x.php is refused, /x.php.gz gave the source (200).
        self.assertEqual(self.body("/x.php")[0], 403)
        self.assertNotEqual(self.body("/x.php.gz")[0], 200)

    def test_a_hard_linked_file_changed_through_its_other_name_is_fresh(self):
        # inotify reports a write to the watches of the directory it was
        # written through: a change made through another hard link (or on
        # NFS by another host) raised no event, and the cached copy was
        # served forever (it was stat-checked before the watch).
        for _ in range(4):
            self.assertEqual(self.body("/page.html"), (200, b"version one\n"))
        with open(f"{self.dir}/elsewhere/page.html", "r+b") as f:
            f.write(b"version two, longer\n")
            f.truncate()
        time.sleep(0.2)
        self.assertEqual(self.body("/page.html"), (200, b"version two, longer\n"))

    def test_a_file_hard_linked_after_it_was_cached_is_fresh(self):
        # The second name came after the entry was cached (which saw one
        # link): a write through it, from a directory nothing watches, went
        # unheard and the old copy was served for good (review 21b, F1).
        write(f"{self.dir}/root/later.html", b"version one\n")
        for _ in range(4):
            self.assertEqual(self.body("/later.html"), (200, b"version one\n"))
        os.link(f"{self.dir}/root/later.html", f"{self.dir}/elsewhere/later.html")
        with open(f"{self.dir}/elsewhere/later.html", "r+b") as f:
            f.write(b"version two, longer\n")
            f.truncate()
        time.sleep(0.2)
        for _ in range(2):
            self.assertEqual(self.body("/later.html"), (200, b"version two, longer\n"))

    def test_a_file_with_two_names_written_through_a_shared_mapping_is_fresh(self):
        # A write through a mapping is no inotify event; only a stat sees
        # it, and a file with several names is stat-checked at each use. Its
        # own inode watch trusted it instead, and the old copy stayed
        # (review 22a).
        path = f"{self.dir}/root/mapped.html"
        write(path, b"AAAA\n")
        os.link(path, f"{self.dir}/elsewhere/mapped.html")
        past = time.time() - 10  # settled: cacheable though stat-checked
        os.utime(path, (past, past))
        for _ in range(4):
            self.assertEqual(self.body("/mapped.html"), (200, b"AAAA\n"))
        with open(path, "r+b") as f:
            mapping = mmap.mmap(f.fileno(), 0)
        try:
            mapping[:] = b"BBBB\n"
            mapping.flush()
            time.sleep(0.2)
            self.assertEqual(self.body("/mapped.html"), (200, b"BBBB\n"))
        finally:
            mapping.close()

    def test_empty_lines_do_not_hold_a_connection_past_request_timeout(self):
        # An empty line before a request line restarts the idle timeout, so
        # a client sending CRLF every second never sent a request and was
        # never closed (request_timeout = 2s). Pre-existing (a708439).
        c = self.connect(timeout=10)
        closed = False
        for _ in range(8):
            try:
                c.sock.sendall(b"\r\n")
            except OSError:
                closed = True
                break
            time.sleep(1)
        if not closed:
            c.sock.settimeout(0.5)
            try:
                closed = c.sock.recv(100) == b""
            except OSError as e:
                closed = not isinstance(e, TimeoutError)
        self.assertTrue(closed, "open after 8 s of empty lines, request_timeout = 2s")


class MagicLinks(ServerTestCase):
    """A symlink RESOLVE_BENEATH refuses is re-opened with plain openat,
    which follows /proc magic links, and accepted when /proc/self/fd names
    a path under the root: a file of another mount namespace (a container)
    is named by its path in that namespace."""

    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        write(f"{d}/root/index.html", b"home\n")

    def test_a_file_of_another_mount_namespace_is_not_served(self):
        root = f"{self.dir}/root"
        pid_file = f"{self.dir}/ns.pid"
        script = (f"mount -t tmpfs none {root} && echo SECRET > {root}/ns.html"
                  f" && echo $$ > {pid_file} && exec sleep 60")
        unshare = shutil.which("unshare")
        if os.geteuid() != 0 or not unshare:
            self.skipTest("needs root and unshare")
        child = subprocess.Popen([unshare, "-m", "--propagation", "private", "sh", "-c", script],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(child.wait)
        self.addCleanup(lambda: child.poll() is None and os.kill(child.pid, signal.SIGKILL))
        for _ in range(50):
            if os.path.exists(pid_file) and os.path.getsize(pid_file):
                break
            if child.poll() is not None:
                self.skipTest("unshare -m is not allowed here")
            time.sleep(0.1)
        with open(pid_file) as f:
            pid = int(f.read())
        self.assertFalse(os.path.exists(f"{root}/ns.html"))
        os.symlink(f"/proc/{pid}/root{root}/ns.html", f"{root}/leak.html")
        c, r = self.roundtrip(get("/leak.html"))
        self.assertNotIn(b"SECRET", r.body)
        self.assertNotEqual(r.status, 200)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
