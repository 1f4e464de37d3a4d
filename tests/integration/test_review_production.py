#!/usr/bin/env python3
"""Issue 16's production pieces, as a hostile review attacked them: a service
manager that stops reading NOTIFY_SOCKET, systemd's "infinity" as
WATCHDOG_USEC, a LISTEN_FDS larger than what was passed, and log files that
are not what their path names.

    test_review_production.py WEFT_BINARY
"""
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_systemd  # noqa: E402
from http_support import WEFT, answers, free_port  # noqa: E402
from test_systemd import config, stop  # noqa: E402


class Notify(unittest.TestCase):
    # test_systemd.py's notify socket, and its weft started with it.
    setUp = test_systemd.Notify.setUp
    start = test_systemd.Notify.start
    messages = test_systemd.Notify.messages

    def test_a_manager_that_stops_reading_does_not_stop_sigterm(self):
        # WATCHDOG=1 every 10 ms to a socket nobody reads: its queue (10
        # datagrams here) fills in 0.1 s. The beat is sent on the thread that
        # takes SIGTERM: a send that waited for room never returned, and weft
        # never stopped.
        port = free_port()
        process = self.start(port, WATCHDOG_USEC="20000")
        self.assertIn("READY=1", self.messages(10))
        time.sleep(1)
        self.assertTrue(answers(port))
        process.send_signal(signal.SIGTERM)
        self.assertEqual(process.wait(timeout=10), 0)

    def test_systemds_infinity_as_watchdog_usec_is_not_a_beat_storm(self):
        # UINT64_MAX / 2 us overflowed the heartbeat's clock: a beat every
        # turn of the signal thread, 34,000 datagrams a second at 84% CPU.
        self.start(free_port(), WATCHDOG_USEC="18446744073709551615")
        self.assertIn("READY=1", self.messages(10))
        beats = 0
        deadline = time.monotonic() + 1
        while beats <= 100 and time.monotonic() < deadline:
            try:
                self.messages(1)
                beats += 1
            except socket.timeout:
                break
        self.assertEqual(beats, 0)


class PassedSockets(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="weft-review16-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def activate(self, listener, count):
        """weft with `listener` as fd 3 and LISTEN_FDS=`count` (LISTEN_PID is
        weft's own: the shell execs it)."""
        port = listener.getsockname()[1]
        # A weft that walks a count of billions makes a vector of billions:
        # bounded here so that a regression aborts instead of eating the
        # machine (not under ASan, which reserves terabytes up front).
        with open(WEFT, "rb") as f:
            asan = b"__asan_init" in f.read()

        def limit():
            os.dup2(listener.fileno(), 3)
            os.set_inheritable(3, True)  # dup2 onto itself keeps CLOEXEC
            os.closerange(4, 65536)  # fds 3.. are only what was passed
            if not asan:
                resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

        return subprocess.run(
            ["/bin/sh", "-c", f'LISTEN_PID=$$ LISTEN_FDS={count} exec "$0" -c "$1"', WEFT,
             config(self.dir, f"127.0.0.1:{port}")],
            preexec_fn=limit, close_fds=False, capture_output=True, text=True, timeout=20)

    def listener(self):
        s = socket.socket()
        self.addCleanup(s.close)
        s.bind(("127.0.0.1", 0))
        s.listen()
        return s

    def test_listen_fds_counting_more_than_was_passed_is_an_error_naming_the_fd(self):
        # fd 4 was not passed: weft's own files took it, and it was judged
        # as a socket systemd passed (made non-blocking, "not a listening
        # stream socket"), or, for a count of billions, bad_alloc.
        for count in ("2", "1000", "3000000000"):
            with self.subTest(LISTEN_FDS=count):
                r = self.activate(self.listener(), count)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("the socket passed by systemd as fd 4 is not open: LISTEN_FDS "
                              "counts more sockets than were passed", r.stderr)



@unittest.skipUnless(os.geteuid() == 0, "needs root: dropping to another user (CI runs as root)")
class LogOwners(unittest.TestCase):
    """Started as root with `user = nobody`, weft gives its log files to
    nobody: only files the path names itself."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="weft-review16-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        os.chmod(self.dir, 0o755)
        os.makedirs(os.path.join(self.dir, "www"))
        self.logs = os.path.join(self.dir, "logs")
        os.makedirs(self.logs)

    def write_conf(self, access_log, error_log):
        """The configuration's path and port."""
        port = free_port()
        conf = os.path.join(self.dir, "weft.conf")
        with open(conf, "w") as f:
            f.write(f"threads = 1\nuser = nobody\naccess_log = {access_log}\n"
                    f"error_log = {error_log}\nlistener 127.0.0.1:{port}\n"
                    f"site {{\n    root = {self.dir}/www\n    files / {{\n    }}\n}}\n")
        return conf, port

    def run_weft(self, access_log, error_log, stdout, stderr):
        conf, port = self.write_conf(access_log, error_log)
        process = subprocess.Popen([WEFT, "-c", conf], stdout=stdout, stderr=stderr)
        self.addCleanup(stop, process)
        deadline = time.monotonic() + 10
        while not answers(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(answers(port))
        return process

    def test_a_symlink_planted_in_a_log_directory_is_refused(self):
        # nobody may write the log directory and links access.log to a file
        # only root may read: weft fchown'ed the file it opened, the target,
        # and root appended request lines (which clients write) to it.
        os.chown(self.logs, 65534, 65534)
        secret = os.path.join(self.dir, "secret")
        with open(secret, "w") as f:
            f.write("root only\n")
        os.chmod(secret, 0o600)
        os.symlink(secret, os.path.join(self.logs, "access.log"))
        r = self.start_weft(os.path.join(self.logs, "access.log"),
                            os.path.join(self.logs, "error.log"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot open access log " + os.path.join(self.logs, "access.log") +
                      ": Too many levels of symbolic links", r.stderr)
        st = os.stat(secret)
        self.assertEqual((st.st_uid, st.st_gid, st.st_mode & 0o777, st.st_size), (0, 0, 0o600, 10))

    def test_a_symlink_only_root_could_make_is_followed(self):
        # A root-owned log directory (the packaged /var/log/weft): its links
        # are root's own, and the log goes where they point.
        target = os.path.join(self.logs, "real.log")
        os.symlink(target, os.path.join(self.logs, "access.log"))
        self.run_weft(os.path.join(self.logs, "access.log"), os.path.join(self.logs, "error.log"),
                      subprocess.DEVNULL, subprocess.DEVNULL)
        self.assertTrue(os.path.isfile(target))
        self.assertEqual(os.stat(target).st_uid, 0)  # a link: not handed to nobody

    def start_weft(self, access_log, error_log):
        conf, _ = self.write_conf(access_log, error_log)
        return subprocess.run([WEFT, "-c", conf], capture_output=True, text=True, timeout=10)

    def test_dev_stdout_and_dev_stderr_stay_the_callers(self):
        # The logs as /dev/stdout and /dev/stderr (containers): the files
        # opened are the caller's pipe (or terminal), given to nobody before.
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        for fd in (out_r, err_r):
            self.addCleanup(os.close, fd)
            os.set_blocking(fd, False)
        try:
            self.run_weft("/dev/stdout", "/dev/stderr", out_w, err_w)
        finally:
            os.close(out_w)
            os.close(err_w)
        self.assertEqual(os.fstat(out_r).st_uid, 0)
        self.assertEqual(os.fstat(err_r).st_uid, 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
