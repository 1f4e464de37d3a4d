#!/usr/bin/env python3
"""io_backend = epoll | uring, and WEFT_IO_BACKEND over it: what `weft -t`
says would run, what a run does run (and answers on), the one line a run
writes when uring cannot run here, and a reload that asks for the other
backend. uring is refused for real where the test needs it: the child runs
under a seccomp filter that fails io_uring_setup with EPERM, as Docker's
default profile does.

Runs on both test presets: every weft here gets the environment the test
sets, WEFT_IO_BACKEND included or removed.

    test_io_backend.py WEFT_BINARY
"""
import contextlib
import ctypes
import errno
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import WEFT, Weft, curl, wait_for  # noqa: E402

SECCOMP_REFUSAL = ("io_uring_setup: Operation not permitted (a seccomp filter, or a "
                   "container's policy)")
NOT_BUILT = "weft was built without liburing"

CONF = """\
threads = 2
{backend}
listener 127.0.0.1:{port}
site {
    response /hello {
        body = "{body}"
    }
    status /status {
    }
}
"""

IO_URING_SETUP = 425  # the same number on x86-64 and aarch64 (asm-generic)


def refuse_io_uring():
    """In the child, before exec: io_uring_setup fails with EPERM from now
    (a classic BPF seccomp filter; no_new_privs lets an unprivileged process
    install it, and it stays across exec)."""
    libc = ctypes.CDLL(None, use_errno=True)
    program = b"".join([
        struct.pack("HBBI", 0x20, 0, 0, 0),  # load seccomp_data.nr
        struct.pack("HBBI", 0x15, 0, 1, IO_URING_SETUP),  # == io_uring_setup?
        struct.pack("HBBI", 0x06, 0, 0, 0x00050000 | errno.EPERM),  # SECCOMP_RET_ERRNO
        struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000),  # SECCOMP_RET_ALLOW
    ])
    filters = ctypes.create_string_buffer(program)
    fprog = ctypes.create_string_buffer(struct.pack("HxxxxxxQ", 4, ctypes.addressof(filters)))
    PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0) != 0:
        os._exit(111)  # the test skips: no seccomp here


@contextlib.contextmanager
def environment_backend(value):
    """WEFT_IO_BACKEND as `value` (None: unset) for every weft started
    inside, then as it was."""
    before = os.environ.get("WEFT_IO_BACKEND")
    if value is None:
        os.environ.pop("WEFT_IO_BACKEND", None)
    else:
        os.environ["WEFT_IO_BACKEND"] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("WEFT_IO_BACKEND", None)
        else:
            os.environ["WEFT_IO_BACKEND"] = before


def check(conf_path, refuse=False):
    r = subprocess.run([WEFT, "-t", "-c", conf_path], capture_output=True, text=True, timeout=20,
                       preexec_fn=refuse_io_uring if refuse else None)
    if r.returncode == 111:
        raise unittest.SkipTest("cannot install a seccomp filter here")
    return r


def backend_line(stdout):
    lines = [line for line in stdout.splitlines() if line.startswith("weft: io_backend = ")]
    assert len(lines) == 1, stdout
    return lines[0][len("weft: "):]


class IoBackend(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix="weft-io-backend-"))
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.dir]))

    def conf(self, backend, body="hello", name="weft.conf"):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(CONF.replace("{backend}", f"io_backend = {backend}" if backend else "")
                    .replace("{port}", "1").replace("{body}", body))
        return path

    def uring_here(self):
        """What -t says of uring here, with nothing refused: "uring", or
        why not."""
        with environment_backend(None):
            line = backend_line(check(self.conf("uring")).stdout)
        if line == "io_backend = uring":
            return None
        m = re.fullmatch(r"io_backend = epoll \(uring is unavailable: (.+)\)", line)
        self.assertIsNotNone(m, line)
        return m.group(1)

    def start(self, backend, body="hello", refuse=False):
        """A running weft whose file asks for `backend`, under the seccomp
        filter when `refuse`; its stdout's "N loops on BACKEND"."""
        weft_conf = CONF.replace("{backend}", f"io_backend = {backend}" if backend else "")
        weft_conf = weft_conf.replace("{body}", body)
        if refuse:
            # Weft starts the binary itself: wrap it for the filter.
            wrapper = os.path.join(self.dir, "refused-weft")
            with open(wrapper, "w") as f:
                f.write("#!/usr/bin/env python3\nimport os, sys\n"
                        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
                        "from test_io_backend import refuse_io_uring\n"
                        f"refuse_io_uring()\nos.execv({WEFT!r}, [{WEFT!r}] + sys.argv[1:])\n")
            os.chmod(wrapper, 0o755)
            import http_support
            saved = http_support.WEFT
            http_support.WEFT = wrapper
            try:
                weft = Weft(self.dir, weft_conf)
            finally:
                http_support.WEFT = saved
        else:
            weft = Weft(self.dir, weft_conf)
        self.addCleanup(weft.kill)
        self.assertTrue(wait_for(lambda: " on " in self.stdout(weft)), self.stdout(weft))
        return weft, re.search(r"loops? on (\w+);", self.stdout(weft)).group(1)

    def stdout(self, weft):
        with open(weft.out_path) as f:
            return f.read()

    def stop(self, weft):
        self.assertEqual(weft.stop(), 0, weft.stderr())

    def answers(self, weft, body="hello"):
        r = curl(weft.port, "/hello")
        self.assertEqual((r.status, r.body), (200, body.encode()))
        status = json.loads(curl(weft.port, "/status?format=json").body)
        return status["io_backend"]

    def test_check_names_the_backend_the_file_asks_for(self):
        why = self.uring_here()
        with environment_backend(None):
            self.assertEqual(backend_line(check(self.conf("epoll")).stdout), "io_backend = epoll")
            self.assertEqual(backend_line(check(self.conf(None)).stdout), "io_backend = epoll")
            r = check(self.conf("uring"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "")
            self.assertEqual(backend_line(r.stdout), "io_backend = uring" if why is None else
                             f"io_backend = epoll (uring is unavailable: {why})")

    def test_the_environment_wins_over_the_file(self):
        why = self.uring_here()
        with environment_backend("epoll"):
            self.assertEqual(backend_line(check(self.conf("uring")).stdout),
                             "io_backend = epoll (WEFT_IO_BACKEND)")
        with environment_backend("uring"):
            self.assertEqual(
                backend_line(check(self.conf("epoll")).stdout),
                "io_backend = uring (WEFT_IO_BACKEND)" if why is None else
                f"io_backend = epoll (WEFT_IO_BACKEND=uring, but uring is unavailable: {why})")

    def test_an_environment_value_naming_no_backend_is_ignored_and_said(self):
        for value in ("io_uring", "EPOLL", "kqueue"):
            with self.subTest(value=value), environment_backend(value):
                r = check(self.conf("epoll"))
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stderr, f"weft: WEFT_IO_BACKEND={value} is ignored (it may be "
                                           "epoll or uring)\n")
                self.assertEqual(backend_line(r.stdout), "io_backend = epoll")
        with environment_backend(""):  # set empty: as unset, nothing said
            r = check(self.conf("epoll"))
            self.assertEqual((r.stderr, backend_line(r.stdout)), ("", "io_backend = epoll"))

    def test_the_server_runs_and_answers_on_either_backend(self):
        why = self.uring_here()
        for backend in ("epoll", "uring"):
            with self.subTest(backend=backend), environment_backend(None):
                weft, running = self.start(backend)
                expected = "epoll" if backend == "epoll" or why is not None else "uring"
                self.assertEqual(running, expected)
                for _ in range(20):
                    self.assertEqual(self.answers(weft), expected)
                self.stop(weft)
                fallback = [line for line in weft.stderr().splitlines() if "io_backend" in line]
                self.assertEqual(fallback, [] if expected == backend else [
                    f"weft: io_backend = uring is unavailable ({why}): using epoll"])

    def test_a_refused_io_uring_falls_back_to_epoll_with_one_line(self):
        why = self.uring_here()
        reason = NOT_BUILT if why == NOT_BUILT else SECCOMP_REFUSAL
        with environment_backend(None):
            r = check(self.conf("uring"), refuse=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(backend_line(r.stdout),
                             f"io_backend = epoll (uring is unavailable: {reason})")
            weft, running = self.start("uring", refuse=True)
            self.assertEqual(running, "epoll")
            self.assertEqual(self.answers(weft), "epoll")
            self.stop(weft)
            said = [line for line in weft.stderr().splitlines() if "io_backend" in line]
            self.assertEqual(said, [f"weft: io_backend = uring is unavailable ({reason}): "
                                    "using epoll"])
        # The environment's uring falls back the same way.
        with environment_backend("uring"):
            weft, running = self.start("epoll", refuse=True)
            self.assertEqual(running, "epoll")
            self.stop(weft)
            self.assertIn(f"weft: io_backend = uring is unavailable ({reason}): using epoll\n",
                          weft.stderr())

    def test_a_reload_asking_for_the_other_backend_keeps_the_loops_and_says_so(self):
        why = self.uring_here()
        with environment_backend(None):
            weft, running = self.start("epoll", body="before")
            self.assertEqual(running, "epoll")
            with open(weft.conf_path, "w") as f:
                f.write(CONF.replace("{backend}", "io_backend = uring")
                        .replace("{port}", str(weft.port)).replace("{body}", "after"))
            weft.process.send_signal(signal.SIGHUP)
            self.assertTrue(wait_for(lambda: "reloaded" in weft.stderr()), weft.stderr())
            # The rest of the file applies; the loops run what they ran.
            self.assertEqual(self.answers(weft, "after"), "epoll")
            self.stop(weft)
            said = [line for line in weft.stderr().splitlines() if "io_backend" in line]
            self.assertEqual(said, ["weft: reload: io_backend = uring takes effect at a restart; "
                                    "the loops keep running epoll"])
            # And back: nothing to say then.
            if why is None:
                weft, running = self.start("uring", body="before")
                self.assertEqual(running, "uring")
                with open(weft.conf_path, "w") as f:
                    f.write(CONF.replace("{backend}", "").replace("{port}", str(weft.port))
                            .replace("{body}", "after"))
                weft.process.send_signal(signal.SIGHUP)
                self.assertTrue(wait_for(lambda: "reloaded" in weft.stderr()), weft.stderr())
                self.assertEqual(self.answers(weft, "after"), "uring")
                self.stop(weft)
                said = [line for line in weft.stderr().splitlines() if "io_backend" in line]
                self.assertEqual(said, ["weft: reload: io_backend = epoll takes effect at a "
                                        "restart; the loops keep running uring"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
