"""What the PHP integration tests share: real php-fpm8.2 pools started with
their own configuration in a temp dir, a count of the FastCGI connections
open to a pool, the PHP fixture scripts, and weft in front of them.

Python stdlib only; php-fpm8.2 and curl are Debian's (.ci/install-deps).
"""
import json
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
from http_support import Client, Weft, curl  # noqa: E402

PHP_FPM = os.environ.get("WEFT_PHP_FPM") or shutil.which("php-fpm8.2") or "/usr/sbin/php-fpm8.2"
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "php")

START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


def require_php_fpm():
    if not os.access(PHP_FPM, os.X_OK):
        raise unittest.SkipTest(f"{PHP_FPM} is missing (Debian package php8.2-fpm: "
                                ".ci/install-deps)")


def unix_accepts(path, timeout=0.2):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(path)
            return True
        except OSError:
            return False


# /proc/net/unix "St" column: a server-side socket accept() has taken is
# SS_CONNECTED (03); one still waiting in the listen backlog has no struct
# socket yet and shows SS_CONNECTING (02). Both are connections a client
# opened to the pool and the pool has not closed.
SS_CONNECTING = "02"
SS_CONNECTED = "03"
ACCEPTCON = 0x10000  # __SO_ACCEPTCON: the listening socket itself


def backend_connections(socket_path, states=(SS_CONNECTING, SS_CONNECTED)):
    """How many connections to the unix socket `socket_path` are open on
    the server's side. A socket a listener accepted carries the listener's
    path in /proc/net/unix; the client's end is unbound and carries none, so
    this counts each connection once, however it was opened."""
    count = 0
    with open("/proc/net/unix") as f:
        next(f)  # Num RefCount Protocol Flags Type St Inode Path
        for line in f:
            fields = line.split()
            if len(fields) < 8 or fields[7] != socket_path:
                continue
            if int(fields[3], 16) & ACCEPTCON:
                continue
            if fields[5] in states:
                count += 1
    return count


def _fcgi_record(type, content, request_id=1):
    return bytes([1, type, request_id >> 8, request_id & 0xFF, len(content) >> 8,
                  len(content) & 0xFF, 0, 0]) + content


def _fcgi_pair(name, value):
    def length(n):
        return bytes([n]) if n < 128 else (n | 0x80000000).to_bytes(4, "big")
    name, value = name.encode(), value.encode()
    return length(len(name)) + length(len(value)) + name + value


def fastcgi_get(socket_path, script, params=None, sock=None):
    """One GET straight to the pool, no weft: the harness's own check that
    the pool answers (FastCGI 1.0, the smallest client that works). Returns
    (stdout, stderr) bytes. With `sock`, sends on that open connection and
    asks the pool to keep it (FCGI_KEEP_CONN)."""
    env = {"SCRIPT_FILENAME": script, "SCRIPT_NAME": "/" + os.path.basename(script),
           "REQUEST_METHOD": "GET", "QUERY_STRING": "", "SERVER_PROTOCOL": "HTTP/1.1",
           "GATEWAY_INTERFACE": "CGI/1.1", **(params or {})}
    pairs = b"".join(_fcgi_pair(k, v) for k, v in env.items())
    keep = sock is not None
    begin = bytes([0, 1, 1 if keep else 0, 0, 0, 0, 0, 0])  # role RESPONDER
    s = sock or socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if not keep:
            s.settimeout(10)
            s.connect(socket_path)
        s.sendall(_fcgi_record(1, begin) + _fcgi_record(4, pairs) + _fcgi_record(4, b"") +
                  _fcgi_record(5, b""))
        out = {6: b"", 7: b""}
        buf = b""
        while True:
            while len(buf) < 8:
                chunk = s.recv(65536)
                if not chunk:
                    raise AssertionError("the pool closed before END_REQUEST")
                buf += chunk
            type, length, padding = buf[1], buf[4] << 8 | buf[5], buf[6]
            while len(buf) < 8 + length + padding:
                chunk = s.recv(65536)
                if not chunk:
                    raise AssertionError("the pool closed inside a record")
                buf += chunk
            content, buf = buf[8:8 + length], buf[8 + length + padding:]
            if type == 3:  # END_REQUEST
                return out[6], out[7]
            out[type] += content
    finally:
        if not keep:
            s.close()


class PhpFpm:
    """One php-fpm8.2 master in the foreground with one static pool, all in
    `dir`/`name`: its main config (which holds the pool), pid file, log and
    unix socket. The distribution's php.ini is read as usual; only the
    fpm config is our own. `env` entries become the workers' environment
    (getenv() in PHP)."""

    def __init__(self, dir, name="php", children=4, env=None, admin=None):
        self.name = name
        self.dir = os.path.join(dir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.socket = os.path.join(self.dir, "php.sock")
        self.conf_path = os.path.join(self.dir, "php-fpm.conf")
        self.log_path = os.path.join(self.dir, "php-fpm.log")
        self.out_path = os.path.join(self.dir, "php-fpm.out")
        self.pid_path = os.path.join(self.dir, "php-fpm.pid")
        self.children = children
        self.as_root = os.geteuid() == 0
        self.process = None
        with open(self.conf_path, "w") as f:
            f.write(self._conf(env or {}, admin or {}))
        self.start()

    def _conf(self, env, admin):
        lines = [
            "[global]",
            f"pid = {self.pid_path}",
            f"error_log = {self.log_path}",
            "log_level = notice",
            "daemonize = no",
            "",
            f"[{self.name}]",
            f"listen = {self.socket}",
            "listen.mode = 0600",
            "pm = static",
            f"pm.max_children = {self.children}",
            # A child's stdout/stderr goes to the fpm log, not to nowhere.
            "catch_workers_output = yes",
            "request_terminate_timeout = 0",
            "clear_env = yes",
            # Errors are never part of a response; they are logged, and with
            # no error_log set PHP sends them over FastCGI stderr to weft.
            "php_admin_flag[display_errors] = off",
            "php_admin_flag[log_errors] = on",
            # 2 MiB uploads, whatever php.ini's 2M limit means at the edge.
            "php_admin_value[upload_max_filesize] = 16M",
            "php_admin_value[post_max_size] = 16M",
        ]
        if self.as_root:
            # php-fpm refuses a root master without -R and a pool user; the
            # pool runs as root so it can read the test's 0700 temp dir.
            lines += ["user = root", "group = root"]
        for key, value in {"POOL_NAME": self.name, **env}.items():
            lines.append(f"env[{key}] = {value}")
        for key, value in admin.items():
            lines.append(f"php_admin_value[{key}] = {value}")
        return "\n".join(lines) + "\n"

    def start(self):
        assert self.process is None or self.process.poll() is not None
        args = [PHP_FPM, "-F", "-O", "-y", self.conf_path, "-p", self.dir]
        if self.as_root:
            args.append("-R")
        with open(self.out_path, "ab") as out:
            self.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while not unix_accepts(self.socket):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"php-fpm {self.name} did not start: exit "
                                     f"{self.process.returncode}\n{self.log()}")
            time.sleep(0.02)
        # The probe above was a connection too: wait until the pool has
        # closed it, so counts start from zero.
        self.wait_connections(lambda n: n == 0, what="no connection after the start")

    def running(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        """A graceful stop (SIGQUIT: children finish their requests), then
        SIGTERM, then SIGKILL; php-fpm removes its socket on the way out."""
        if not self.running():
            return
        for sig, wait in [(signal.SIGQUIT, STOP_TIMEOUT), (signal.SIGTERM, 3.0)]:
            self.process.send_signal(sig)
            try:
                self.process.wait(wait)
                return
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def kill(self):
        if self.running():
            self.process.kill()
            self.process.wait()

    def restart(self):
        self.stop()
        self.start()

    def connections(self, states=(SS_CONNECTING, SS_CONNECTED)):
        return backend_connections(self.socket, states)

    def wait_connections(self, ok, timeout=5.0, what="the expected connection count",
                         states=(SS_CONNECTING, SS_CONNECTED)):
        """Polls the count until ok(count); fails with the last count after
        `timeout` (only an upper bound: a correct server gets there at once)."""
        deadline = time.monotonic() + timeout
        while True:
            n = self.connections(states)
            if ok(n):
                return n
            if time.monotonic() > deadline:
                raise AssertionError(f"pool {self.name}: {n} connections open, expected "
                                     f"{what}")
            time.sleep(0.02)

    def log(self):
        text = ""
        for path in (self.log_path, self.out_path):
            try:
                with open(path, errors="replace") as f:
                    text += f.read()
            except OSError:
                pass
        return text


def install_fixtures(www, layout):
    """Copies fixture scripts into the document root: `layout` maps a path
    under `www` to a fixture file name (or to bytes written as they are)."""
    for rel, source in layout.items():
        path = os.path.join(www, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(source, bytes):
            with open(path, "wb") as f:
                f.write(source)
        else:
            shutil.copyfile(os.path.join(FIXTURES, source), path)


class Marks:
    """The files the fixture scripts use to say where they are (started-ID,
    done-ID) and to be told to go on (release-ID): tests assert the order
    of events, never how long something took."""

    def __init__(self, dir):
        self.dir = dir
        os.makedirs(dir, exist_ok=True)

    def path(self, kind, id):
        return os.path.join(self.dir, f"{kind}-{id}")

    def exists(self, kind, id):
        return os.path.exists(self.path(kind, id))

    def release(self, id):
        with open(self.path("release", id), "w"):
            pass

    def wait(self, kind, id, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not self.exists(kind, id):
            if time.monotonic() > deadline:
                raise AssertionError(f"no {kind}-{id} within {timeout} s")
            time.sleep(0.01)


class PhpTestCase(unittest.TestCase):
    """Pools (POOLS: name -> children), then one weft from CONF ({port},
    {dir}; each pool's socket is {dir}/NAME/php.sock), per test class.
    setUpDir() plants the document root first. The workers find the marks
    dir in getenv('MARK_DIR'); POOL_ADMIN ({dir} too) adds php_admin_value
    settings to every pool."""

    CONF = None
    POOLS = {"php": 4}
    POOL_ADMIN = {}

    @classmethod
    def setUpDir(cls, dir):
        pass

    @classmethod
    def setUpClass(cls):
        require_php_fpm()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.realpath(cls.tmp.name)
        cls.marks = Marks(os.path.join(cls.dir, "marks"))
        cls.pools = {}
        try:
            cls.setUpDir(cls.dir)
            for name, children in cls.POOLS.items():
                admin = {k: v.replace("{dir}", cls.dir) for k, v in cls.POOL_ADMIN.items()}
                cls.pools[name] = PhpFpm(cls.dir, name, children,
                                         env={"MARK_DIR": cls.marks.dir}, admin=admin)
            cls.weft = Weft(cls.dir, cls.CONF)
        except BaseException:
            cls._stop_pools()
            cls.tmp.cleanup()
            raise
        cls.port = cls.weft.port

    @classmethod
    def _stop_pools(cls):
        for pool in cls.pools.values():
            pool.stop()

    @classmethod
    def tearDownClass(cls):
        try:
            code = cls.weft.stop()
            if code != 0:
                raise AssertionError(f"weft exited {code} on SIGTERM\n{cls.weft.stderr()}")
        finally:
            cls._stop_pools()
            cls.tmp.cleanup()

    # --- helpers for the tests ---
    def connect(self, timeout=10.0):
        c = Client(self.port, timeout)
        self.addCleanup(c.close)
        return c

    def roundtrip(self, data, timeout=10.0, **response_args):
        """Sends `data` on a new connection and reads one response."""
        c = self.connect(timeout)
        c.send(data)
        return c, c.response(**response_args)

    def curl(self, path, *args, host=None):
        return curl(self.port, path, *args, host=host)


# --- The PHP site most test_php_*.py files share ---

SECRET = b"TOP SECRET"
# What a file that must never run as PHP would print if it ran; its source
# does not hold the word, so serving the file as it is shows no EXECUTED.
EXECUTED = b"EXECUTED"
NOT_PHP = b'<?php echo strrev("DETUCEXE");\n'

SCRIPTS = ["info.php", "echo.php", "pool.php", "upload.php", "body.php", "headers.php",
           "teapot.php", "status.php", "redirect.php", "big.php", "fatal.php", "stderr.php",
           "stream.php", "finish.php", "hold.php", "huge_header.php", "length.php",
           "wide_header.php", "framing.php"]


def install_site(www):
    layout = {name: name for name in SCRIPTS}
    layout.update({
        "index.php": "info.php",
        "sub/index.php": "info.php",
        "dir.php/info.php": "info.php",  # a directory named like a script
        "uploads/a.jpg": NOT_PHP,
        "uploads/notes.txt": NOT_PHP,
        "style.css": b"body { color: red }\n",
        "data/secret.txt": SECRET,
        "data/x.php": NOT_PHP,
        "conf/local.php": NOT_PHP,
        ".env": SECRET,
        ".git/config": SECRET,
        "hidden/.secret.php": NOT_PHP,
    })
    install_fixtures(www, layout)


UPSTREAM_PHP = """\
upstream php {
    server = unix:{dir}/php/php.sock
    keepalive = 4
    max_conns = 4
    connect_timeout = 2s
    read_timeout = 10s
    queue_timeout = 10s
}
"""

# The default site: no fallback. front.test: the same with a front
# controller. pass.test: `pass` instead of a named upstream.
SITE_CONF = """\
threads = 2
request_timeout = 5s
keep_alive_timeout = 5s
max_request_body = 16M
listener 127.0.0.1:{port}
""" + UPSTREAM_PHP + """\
site {
    host = front.test
    root = {dir}/www
    fastcgi / {
        upstream = php
        fallback = /index.php
        deny = /data /conf
        params {
            APP_ENV = testing
        }
    }
}
site {
    host = pass.test
    root = {dir}/www
    fastcgi / {
        pass = unix:{dir}/php/php.sock
    }
}
site {
    root = {dir}/www
    fastcgi / {
        upstream = php
        extensions = .php
        index = index.php
        static = on
        deny = /data /conf
        params {
            APP_ENV = testing
        }
    }
}
"""


class SiteTestCase(PhpTestCase):
    CONF = SITE_CONF
    POOLS = {"php": 4}

    @classmethod
    def setUpDir(cls, dir):
        cls.www = os.path.join(dir, "www")
        install_site(cls.www)

    def php_vars(self, path, *curl_args, host=None):
        """What info.php (or a copy of it) received for `path`."""
        r = self.curl(path, *curl_args, host=host)
        self.assertEqual(r.status, 200, r.body[:300])
        return json.loads(r.body)

    def assertNeverPhp(self, r, path):
        self.assertNotIn(EXECUTED, r.body, f"{path} ran as PHP")
