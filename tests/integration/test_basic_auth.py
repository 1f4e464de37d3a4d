#!/usr/bin/env python3
"""Basic authentication (issue 17): auth_basic and auth_basic_user_file on a
site and its handlers, against htpasswd files the real `htpasswd`
(apache2-utils) writes in every scheme weft checks (bcrypt -B, SHA-256 -2,
SHA-512 -5, apr1 -m, {SHA} -s); 401 with the realm's challenge; malformed
Authorization fields; a handler's own realm and `auth_basic = off`; with
allow_from (403 before 401, as nginx's `satisfy all`; and `satisfy = any`);
the file changed
while weft runs; the access log's user; REMOTE_USER for PHP.

    test_basic_auth.py WEFT_BINARY
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import WEFT, ServerTestCase, connect_from, read, read_until_close, wait_for  # noqa: E402
from php_support import PhpTestCase, install_site  # noqa: E402

HTPASSWD = shutil.which("htpasswd")

# user -> (htpasswd's scheme flags, password)
USERS = {
    "bea": (["-B", "-C", "5"], "bcrypt pass"),
    "sha256": (["-2"], "two five six"),
    "sha512": (["-5"], "five one two"),
    "apr": (["-m"], "apr:1 with colon"),
    "sha": (["-s"], "sha one"),
}


def htpasswd(path, user, password, *flags):
    """Adds or changes `user` in the file at `path` with the real htpasswd."""
    create = [] if os.path.exists(path) else ["-c"]
    subprocess.run([HTPASSWD, "-b", *create, *flags, path, user, password], check=True,
                   capture_output=True, timeout=30)


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def request(port, path, authorization=None, source="127.0.0.1", method="GET", extra="",
            host="auth.test"):
    """One request from `source`: (status, headers dict (lower-case), body)."""
    with connect_from(port, source) as s:
        head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n"
        if authorization is not None:
            head += f"Authorization: {authorization}\r\n"
        s.sendall((head + extra + "\r\n").encode("latin-1"))
        return read_until_close(s)


REALM = 'Staff "only" \\ here'
CHALLENGE = 'Basic realm="Staff \\"only\\" \\\\ here", charset="UTF-8"'

CONF = """\
threads = 2
listener 127.0.0.1:{port}
access_log = {dir}/access.log
site {
    auth_basic = "Staff \\"only\\" \\\\ here"
    auth_basic_user_file = {dir}/users
    error_page = 404 file {dir}/404.html
    response / {
        body = inside
    }
    response /public {
        auth_basic = off
        body = public
    }
    response /own {
        auth_basic = Own
        auth_basic_user_file = {dir}/own
        body = own
    }
    response /ownrealm {
        auth_basic = Other realm
        body = ownrealm
    }
    response /guarded {
        allow_from = 127.0.0.1
        deny_from = all
        body = guarded
    }
    response /either {
        allow_from = 127.0.0.2
        deny_from = all
        satisfy = any
        body = either
    }
    response /changing {
        auth_basic_user_file = {dir}/changing
        body = changing
    }
    response /page {
        body = page
        error_page = 401 file {dir}/401.html
    }
}
site {
    host = sparse.test
    auth_basic = Sparse
    auth_basic_user_file = {dir}/own
    error_page = 404 file {dir}/404.html
    response exact /x {
        body = x
    }
}
"""


@unittest.skipIf(HTPASSWD is None, "no htpasswd (Debian package apache2-utils)")
class BasicAuthTest(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, dir):
        for user, (flags, password) in USERS.items():
            htpasswd(os.path.join(dir, "users"), user, password, *flags)
        htpasswd(os.path.join(dir, "own"), "owner", "own pass", "-m")
        htpasswd(os.path.join(dir, "changing"), "stays", "stays pass", "-m")
        htpasswd(os.path.join(dir, "changing"), "goes", "goes pass", "-B", "-C", "4")
        with open(os.path.join(dir, "401.html"), "w") as f:
            f.write("log in first\n")
        with open(os.path.join(dir, "404.html"), "w") as f:
            f.write("not here\n")

    def get(self, path, authorization=None, **kw):
        return request(self.port, path, authorization, **kw)

    def test_no_credentials_get_401_with_the_realms_challenge(self):
        status, headers, _ = self.get("/")
        self.assertEqual(status, 401)
        self.assertEqual(headers["www-authenticate"], CHALLENGE)
        status, headers, body = self.get("/", method="HEAD")
        self.assertEqual((status, body), (401, ""))
        self.assertEqual(headers["www-authenticate"], CHALLENGE)

    def test_every_scheme_htpasswd_writes_lets_its_user_in_with_curl(self):
        for user, (_, password) in USERS.items():
            with self.subTest(user=user):
                r = self.curl("/", "-u", f"{user}:{password}", host="auth.test")
                self.assertEqual((r.status, r.body), (200, b"inside"))
                # Twice: the second is remembered by the loop, still right.
                r = self.curl("/", "-u", f"{user}:{password}", host="auth.test")
                self.assertEqual((r.status, r.body), (200, b"inside"))

    def test_wrong_passwords_and_unknown_users_get_401(self):
        for user, (_, password) in USERS.items():
            with self.subTest(user=user):
                for wrong in (password + "x", password[:-1], password.upper(), ""):
                    r = self.curl("/", "-u", f"{user}:{wrong}", host="auth.test")
                    self.assertEqual(r.status, 401, wrong)
                    self.assertEqual(r.header("WWW-Authenticate"), CHALLENGE)
        # A right password under another name, and a name in another case.
        self.assertEqual(self.get("/", basic("nobody", "bcrypt pass"))[0], 401)
        self.assertEqual(self.get("/", basic("Bea", "bcrypt pass"))[0], 401)
        self.assertEqual(self.get("/", basic("bea", "bcrypt pass"))[0], 200)

    def test_malformed_authorization_fields_get_401(self):
        good = base64.b64encode(b"apr:apr:1 with colon").decode()
        self.assertEqual(self.get("/", "Basic " + good)[0], 200)
        self.assertEqual(self.get("/", "basic " + good)[0], 200)  # the scheme in any case
        self.assertEqual(self.get("/", "BASIC    " + good)[0], 200)
        for bad in ["", "Basic", "Basic ", "Basic" + good, "Bearer " + good,
                    "Basic " + good.rstrip("="),            # padding taken off
                    "Basic " + good + "=",                  # one '=' too many
                    "Basic " + good[:-2] + "==",            # padding where bits are
                    "Basic !!!!", "Basic " + good + " x",
                    "Basic " + base64.b64encode(b"apr").decode(),  # no ':'
                    "Basic " + base64.b64encode(b":").decode(),
                    "Basic " + base64.b64encode(b"apr:apr:1 with\x00colon").decode(),
                    "Basic " + base64.b64encode(b"apr\x01:x").decode(),
                    "Basic " + "QUFB" * 1500]:              # 6000 bytes decoded
            with self.subTest(bad=bad[:40]):
                status, headers, _ = self.get("/", bad)
                self.assertEqual(status, 401)
                self.assertEqual(headers["www-authenticate"], CHALLENGE)
        # The server is still there, and well.
        self.assertEqual(self.get("/", "Basic " + good)[0], 200)

    def test_a_handler_turns_the_sites_off_or_has_its_own(self):
        self.assertEqual(self.get("/public")[0:3:2], (200, "public"))
        status, headers, _ = self.get("/own", basic("bea", "bcrypt pass"))
        self.assertEqual(status, 401)  # its own file, without bea
        self.assertEqual(headers["www-authenticate"], 'Basic realm="Own", charset="UTF-8"')
        self.assertEqual(self.get("/own", basic("owner", "own pass"))[0:3:2], (200, "own"))
        self.assertEqual(self.get("/", basic("owner", "own pass"))[0], 401)
        # Its own realm over the site's file.
        status, headers, _ = self.get("/ownrealm")
        self.assertEqual(headers["www-authenticate"], 'Basic realm="Other realm", charset="UTF-8"')
        self.assertEqual(self.get("/ownrealm", basic("sha", "sha one"))[0], 200)

    def test_a_denied_address_gets_403_before_any_401(self):
        self.assertEqual(self.get("/guarded", source="127.0.0.2")[0], 403)
        self.assertEqual(self.get("/guarded", basic("sha", "sha one"), source="127.0.0.2")[0], 403)
        self.assertEqual(self.get("/guarded")[0], 401)
        self.assertEqual(self.get("/guarded", basic("sha", "sha one"))[0:3:2], (200, "guarded"))

    def test_satisfy_any_takes_the_address_or_the_credentials(self):
        self.assertEqual(self.get("/either", source="127.0.0.2")[0:3:2], (200, "either"))
        status, headers, _ = self.get("/either")  # denied, and no credentials: 401
        self.assertEqual(status, 401)
        self.assertEqual(headers["www-authenticate"], CHALLENGE)
        self.assertEqual(self.get("/either", basic("sha", "wrong"))[0], 401)
        self.assertEqual(self.get("/either", basic("sha", "sha one"))[0:3:2], (200, "either"))

    def test_a_path_no_handler_takes_asks_for_credentials_before_its_404(self):
        status, headers, _ = self.get("/y", host="sparse.test")
        self.assertEqual(status, 401)
        self.assertEqual(headers["www-authenticate"], 'Basic realm="Sparse", charset="UTF-8"')
        status, _, body = self.get("/y", basic("owner", "own pass"), host="sparse.test")
        self.assertEqual((status, body), (404, "not here\n"))
        self.assertEqual(self.get("/x", basic("owner", "own pass"), host="sparse.test")[0], 200)

    def test_error_page_for_401_keeps_the_challenge(self):
        status, headers, body = self.get("/page")
        self.assertEqual((status, body), (401, "log in first\n"))
        self.assertEqual(headers["www-authenticate"], CHALLENGE)

    def test_the_access_log_names_the_user(self):
        self.assertEqual(self.get("/?logged=1", basic("apr", "apr:1 with colon"))[0], 200)
        self.assertEqual(self.get("/?logged=2")[0], 401)
        self.assertEqual(self.get("/?logged=3", basic("apr", "wrong"))[0], 401)
        log = os.path.join(self.dir, "access.log")

        def lines():
            return [line for line in read(log).splitlines() if "?logged=" in line]

        self.assertTrue(wait_for(lambda: len(lines()) == 3, timeout=5.0), lines())
        by_query = {line.split("?logged=")[1][0]: line.split(" ") for line in lines()}
        # addr - USER [time] ...: the third field, as nginx's $remote_user
        # (the name sent, let in or not).
        self.assertEqual(by_query["1"][2], "apr")
        self.assertEqual(by_query["2"][2], "-")
        self.assertEqual(by_query["3"][2], "apr")
        self.assertIn('" 200 ', " ".join(by_query["1"]))

    def test_the_file_changed_while_running(self):
        path = os.path.join(self.dir, "changing")
        self.assertEqual(self.get("/changing", basic("stays", "stays pass"))[0], 200)
        self.assertEqual(self.get("/changing", basic("goes", "goes pass"))[0], 200)
        self.assertEqual(self.get("/changing", basic("new", "new pass"))[0], 401)
        htpasswd(path, "new", "new pass", "-5")
        subprocess.run([HTPASSWD, "-D", path, "goes"], check=True, capture_output=True)
        # Looked at once a second: bounded waits, generous for a loaded machine.
        self.assertTrue(wait_for(
            lambda: self.get("/changing", basic("new", "new pass"))[0] == 200, timeout=10.0))
        # Removed, though both loops remembered its right password.
        self.assertTrue(wait_for(
            lambda: all(self.get("/changing", basic("goes", "goes pass"))[0] == 401
                        for _ in range(4)), timeout=10.0))
        self.assertEqual(self.get("/changing", basic("stays", "stays pass"))[0], 200)
        # A file that went bad keeps the users read before, and says so once.
        with open(path, "a") as f:
            f.write("broken line\n")
        # (Looked at when a request comes.)
        def complained():
            self.get("/changing")
            return "the users read before stay" in self.weft.stderr()

        self.assertTrue(wait_for(complained, timeout=10.0), self.weft.stderr())
        for _ in range(3):
            time.sleep(0.6)
            self.get("/changing")
        self.assertEqual(self.weft.stderr().count("the users read before stay"), 1)
        self.assertIn(path + ":", self.weft.stderr())
        self.assertEqual(self.get("/changing", basic("new", "new pass"))[0], 200)
        self.assertEqual(self.get("/changing", basic("goes", "goes pass"))[0], 401)


@unittest.skipIf(HTPASSWD is None, "no htpasswd (Debian package apache2-utils)")
class LoadTimeErrors(unittest.TestCase):
    """weft -t names the file and its line."""

    def check(self, dir, users_text):
        users = os.path.join(dir, "users")
        if users_text is not None:
            with open(users, "w") as f:
                f.write(users_text)
        conf = os.path.join(dir, "weft.conf")
        with open(conf, "w") as f:
            f.write("site {\n    auth_basic = x\n    auth_basic_user_file = users\n}\n")
        r = subprocess.run([WEFT, "-t", "-c", conf], capture_output=True, timeout=30)
        return r.returncode, r.stderr.decode() + r.stdout.decode()

    def test_plain_text_missing_and_good_files(self):
        import tempfile
        with tempfile.TemporaryDirectory() as dir:
            code, out = self.check(dir, None)
            self.assertNotEqual(code, 0)
            self.assertIn(f"weft.conf:3:28: cannot read {dir}/users: No such file", out)
            plain = os.path.join(dir, "users")
            subprocess.run([HTPASSWD, "-cbp", plain, "f", "pw"], check=True, capture_output=True)
            htpasswd(plain, "g", "pw", "-m")
            code, out = self.check(dir, None)
            self.assertNotEqual(code, 0)
            self.assertIn(f"{dir}/users:1: user 'f': not a hash weft checks", out)
            self.assertIn("plain-text passwords (htpasswd -p)", out)
            code, out = self.check(dir, read(plain).split("\n", 1)[1])
            self.assertEqual(code, 0, out)


PHP_CONF = """\
threads = 1
listener 127.0.0.1:{port}
upstream php {
    server = unix:{dir}/php/php.sock
}
site {
    root = {dir}/www
    fastcgi / {
        upstream = php
        extensions = .php
        auth_basic = PHP
        auth_basic_user_file = {dir}/users
    }
    fastcgi /open {
        upstream = php
        extensions = .php
        alias = {dir}/www
    }
}
"""


@unittest.skipIf(HTPASSWD is None, "no htpasswd (Debian package apache2-utils)")
class PhpSeesTheUser(PhpTestCase):
    CONF = PHP_CONF
    POOLS = {"php": 2}

    @classmethod
    def setUpDir(cls, dir):
        install_site(os.path.join(dir, "www"))
        htpasswd(os.path.join(dir, "users"), "alice", "wonder land", "-B", "-C", "5")

    def test_remote_user_and_auth_type(self):
        r = self.curl("/info.php", "-u", "alice:wonder land")
        self.assertEqual(r.status, 200, r.body[:300])
        server = json.loads(r.body)["server"]
        self.assertEqual(server["REMOTE_USER"], "alice")
        self.assertEqual(server["AUTH_TYPE"], "Basic")
        r = self.curl("/info.php", "-u", "alice:wrong")
        self.assertEqual(r.status, 401)

    def test_no_remote_user_without_auth_basic(self):
        # Credentials sent where none are asked for are not a user.
        r = self.curl("/open/info.php", "-u", "alice:wonder land")
        self.assertEqual(r.status, 200, r.body[:300])
        server = json.loads(r.body)["server"]
        self.assertNotIn("REMOTE_USER", server)
        self.assertNotIn("AUTH_TYPE", server)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
