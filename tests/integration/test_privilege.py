#!/usr/bin/env python3
"""`user = nobody`, `group = nogroup`: started as root, weft opens its
listener and logs, then every thread serves as nobody:nogroup with
NoNewPrivs; a file only root may read is 403; the access log belongs to
nobody, and SIGUSR1 after a rotation (the new file created as nobody, as
logrotate's `create` would) keeps logging. Needs root (CI runs as root):
skipped otherwise.

    test_privilege.py WEFT_BINARY
"""
import grp
import os
import pwd
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import WEFT, ServerTestCase, Weft, curl, read, wait_for  # noqa: E402

CONF = """\
threads = 2
user = nobody
group = nogroup
access_log = {dir}/logs/access.log
error_log = {dir}/logs/error.log
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files / {
    }
}
"""


@unittest.skipUnless(os.geteuid() == 0, "needs root: dropping to another user (CI runs as root)")
class Privilege(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        cls.nobody = pwd.getpwnam("nobody").pw_uid
        cls.nogroup = grp.getgrnam("nogroup").gr_gid
        os.chmod(d, 0o755)  # the temp dir is 0700: nobody must reach www/
        os.makedirs(os.path.join(d, "www"))
        os.makedirs(os.path.join(d, "logs"))
        with open(os.path.join(d, "www", "public.txt"), "w") as f:
            f.write("for everyone\n")
        os.chmod(os.path.join(d, "www", "public.txt"), 0o644)
        secret = os.path.join(d, "www", "secret.txt")
        with open(secret, "w") as f:
            f.write("root only\n")
        os.chown(secret, 0, 0)
        os.chmod(secret, 0o600)

    def test_every_thread_serves_as_the_user_without_new_privileges(self):
        pid = self.weft.process.pid
        tasks = os.listdir(f"/proc/{pid}/task")
        self.assertGreaterEqual(len(tasks), 3, "the main thread and two loops")
        for task in tasks:
            status = {}
            for line in read(f"/proc/{pid}/task/{task}/status").splitlines():
                key, _, value = line.partition(":")
                status[key] = value.split()
            self.assertEqual(status["Uid"], [str(self.nobody)] * 4, f"task {task}")
            self.assertEqual(status["Gid"], [str(self.nogroup)] * 4, f"task {task}")
            # initgroups: nobody's groups, which are nogroup alone; never root's.
            self.assertEqual(status["Groups"], [str(self.nogroup)], f"task {task}")
            self.assertEqual(status["NoNewPrivs"], ["1"], f"task {task}")

    def test_a_file_only_root_may_read_is_403_and_a_public_one_is_served(self):
        r = curl(self.port, "/secret.txt")
        self.assertEqual(r.status, 403)
        self.assertNotIn(b"root only", r.body)
        r = curl(self.port, "/public.txt")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.body, b"for everyone\n")

    def test_the_logs_belong_to_the_user_and_reopen_after_a_rotation(self):
        logs = os.path.join(self.dir, "logs")
        for name in ("access.log", "error.log"):
            st = os.stat(os.path.join(logs, name))
            self.assertEqual((st.st_uid, st.st_gid), (self.nobody, self.nogroup), name)
        curl(self.port, "/public.txt?before")
        os.rename(os.path.join(logs, "access.log"), os.path.join(logs, "access.log.1"))
        # logrotate's `create 0640 nobody nogroup`:
        fd = os.open(os.path.join(logs, "access.log"), os.O_CREAT | os.O_WRONLY, 0o640)
        os.fchown(fd, self.nobody, self.nogroup)
        os.close(fd)
        self.weft.process.send_signal(signal.SIGUSR1)
        time.sleep(0.3)
        curl(self.port, "/public.txt?after")
        self.assertTrue(wait_for(lambda: "?after" in read(os.path.join(logs, "access.log"))),
                        read(os.path.join(logs, "error.log")))
        # A loop whose buffer went out after the swap wrote it to the new file.
        both = read(os.path.join(logs, "access.log.1")) + read(os.path.join(logs, "access.log"))
        self.assertEqual(both.count("?before"), 1)
        self.assertNotIn("cannot", read(os.path.join(logs, "error.log")))


@unittest.skipUnless(os.geteuid() == 0, "needs root: the warning is for root")
class StartUp(unittest.TestCase):
    def run_weft(self, conf, *args):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "weft.conf")
            with open(path, "w") as f:
                f.write(conf)
            return subprocess.run([WEFT, *args, "-c", path], capture_output=True, text=True,
                                  timeout=10)

    def test_an_unknown_user_or_group_is_an_error_at_start_and_for_weft_t(self):
        for conf, says in (("user = no-such-user-x\n", "no such user"),
                           ("user = nobody\ngroup = no-such-group-x\n", "no such group"),
                           ("group = nogroup\n", "needs a user")):
            for args in ((), ("-t",)):
                r = self.run_weft(conf + "listener 127.0.0.1:1\n", *args)
                self.assertEqual(r.returncode, 1, (conf, args, r.stderr))
                self.assertIn(says, r.stderr, (conf, args))

    def test_root_without_user_warns_once(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "www"))
            weft = Weft(d, "listener 127.0.0.1:{port}\nsite {\n root = {dir}/www\n"
                           "files / {\n}\n}\n")
            self.assertEqual(weft.stop(), 0, weft.stderr())
            self.assertEqual(weft.stderr().count("running as root"), 1, weft.stderr())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
