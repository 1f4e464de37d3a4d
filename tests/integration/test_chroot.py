#!/usr/bin/env python3
"""`chroot = DIR`: started as root, weft opens its listener, then confines
itself to DIR before anything else is opened: roots, logs and the file a
SIGHUP re-reads are paths inside it, and a symlink to an absolute path
outside finds nothing. Needs root (CI runs as root): skipped otherwise.

    test_chroot.py WEFT_BINARY
"""
import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, curl, read, wait_for  # noqa: E402

CONF = """\
threads = 2
user = nobody
group = nogroup
chroot = {dir}/jail
access_log = /logs/access.log
listener 127.0.0.1:{port}
site {
    root = /www
    files / {
        follow_symlinks = on
    }
}
"""


@unittest.skipUnless(os.geteuid() == 0, "needs root: chroot (CI runs as root)")
class Chroot(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        # An ASan build's LeakSanitizer reads /proc at exit, which the jail
        # has not: it would fail the exit, not find a leak.
        os.environ["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        os.chmod(d, 0o755)
        jail = os.path.join(d, "jail")
        os.makedirs(os.path.join(jail, "www"))
        os.makedirs(os.path.join(jail, "logs"))
        with open(os.path.join(jail, "www", "index.html"), "w") as f:
            f.write("inside\n")
        # The same absolute path names a file outside the jail only.
        with open(os.path.join(d, "outside.txt"), "w") as f:
            f.write("outside\n")
        os.symlink(os.path.join(d, "outside.txt"), os.path.join(jail, "www", "escape.txt"))

    def test_roots_and_logs_are_inside_the_jail(self):
        r = curl(self.port, "/index.html")
        self.assertEqual((r.status, r.body), (200, b"inside\n"))
        pid = self.weft.process.pid
        self.assertEqual(os.readlink(f"/proc/{pid}/root"), os.path.join(self.dir, "jail"))
        log = os.path.join(self.dir, "jail", "logs", "access.log")
        self.assertTrue(wait_for(lambda: "GET /index.html HTTP/1.1" in read(log), timeout=5),
                        self.weft.stderr())

    def test_a_symlink_to_an_absolute_path_outside_finds_nothing(self):
        r = curl(self.port, "/escape.txt")
        self.assertEqual(r.status, 404)
        self.assertNotIn(b"outside", r.body)

    def test_a_reload_reads_the_file_at_its_path_inside_the_jail(self):
        jail = os.path.join(self.dir, "jail")
        inside = jail + self.weft.conf_path
        self.weft.process.send_signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: "read inside the chroot" in self.weft.stderr(),
                                 timeout=5), self.weft.stderr())
        self.assertEqual(curl(self.port, "/").body, b"inside\n")
        os.makedirs(os.path.dirname(inside), exist_ok=True)
        with open(os.path.join(jail, "www", "other.html"), "w") as f:
            f.write("reloaded\n")
        with open(self.weft.conf_path) as f:
            text = f.read()
        with open(inside, "w") as f:
            f.write(text.replace("files / {", "files / {\n        index = other.html"))
        self.weft.process.send_signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: curl(self.port, "/").body == b"reloaded\n", timeout=5),
                        self.weft.stderr())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
