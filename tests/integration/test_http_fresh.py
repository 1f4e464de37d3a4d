#!/usr/bin/env python3
"""A file changed on disk, or a docroot switched by a deploy, is what the
very next request gets: the files handler's cache, the fastcgi handler's
script lookups and the roots themselves follow the disk (inotify per loop).

Every check fetches right after the change, several times on new
connections (two loops: either may answer) and on a keep-alive connection
opened before the change; none waits for a cache to expire.

    test_http_fresh.py WEFT_BINARY
"""
import os
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, get  # noqa: E402
from php_support import PhpTestCase  # noqa: E402

HOUR_AGO = time.time() - 3600
TRIES = 4
WARM = 8  # requests before a change, so both loops have the file cached


def write(path, data, mtime=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def rewrite_in_place(path, data):
    """The same inode, truncated and written again (an upload that
    overwrites, `cp` onto an existing file)."""
    with open(path, "r+b") as f:
        f.write(data)
        f.truncate()


def switch_symlink(link, target):
    """What deploy tools do: a new symlink beside the old, renamed over it."""
    tmp = link + ".new"
    os.symlink(target, tmp)
    os.rename(tmp, link)


class Fetching:
    """Requests on new connections and on one kept-alive connection."""

    def fetch(self, path, extra=""):
        c, r = self.roundtrip(get(path, extra=extra))
        return r

    def keep_alive(self):
        c = self.connect()
        return c

    def fetch_on(self, client, path, extra=""):
        client.send(get(path, extra=extra))
        return client.response()

    def warm(self, path):
        """The file as served before a change, with its ETag, cached by every
        loop (the new code caches at once; the old one only files older than
        2 s, so the fixtures are dated an hour back)."""
        for _ in range(WARM):
            r = self.fetch(path)
            self.assertEqual(r.status, 200, r)
        return r

    def assertServes(self, path, body, old=None, client=None):
        """TRIES fetches on new connections and TRIES on `client`, all the new
        bytes, none with the old ETag; the old ETag is no 304 any more."""
        for i in range(TRIES):
            for how, r in (("new connection", self.fetch(path)),
                           ("kept-alive", self.fetch_on(client, path) if client else None)):
                if r is None:
                    continue
                with self.subTest(path=path, attempt=i, how=how):
                    self.assertEqual(r.status, 200, r)
                    self.assertEqual(r.body, body)
                    if old is not None:
                        self.assertNotEqual(r.header("etag"), old.header("etag"))
        if old is not None:
            r = self.fetch(path, f"If-None-Match: {old.header('etag')}\r\n")
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.body, body)
            # And the new ETag is what gives a 304 now.
            new = self.fetch(path)
            r = self.fetch(path, f"If-None-Match: {new.header('etag')}\r\n")
            self.assertEqual(r.status, 304, r)


FILES_CONF = """\
threads = 2
request_timeout = 2s
keep_alive_timeout = 30s
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files / {
        precompressed = on
    }
    files /deployed {
        root = {dir}/current
    }
}
"""


class Files(Fetching, ServerTestCase):
    CONF = FILES_CONF

    @classmethod
    def setUpDir(cls, d):
        www = os.path.join(d, "www")
        for name in ["same.txt", "longer.txt", "second.txt", "putback.txt", "renamed.txt",
                     "twin.txt"]:
            write(os.path.join(www, name), f"{name}: version one\n", HOUR_AGO)
        write(os.path.join(www, "sub", "deep", "file.txt"), "deep: version one\n", HOUR_AGO)
        for release in ["1", "2"]:
            base = os.path.join(d, "releases", release, "deployed")
            write(os.path.join(base, "app.js"), f"app of release {release}\n", HOUR_AGO)
            write(os.path.join(base, f"only-in-{release}.txt"), f"release {release}\n",
                  HOUR_AGO)
        os.symlink("releases/1", os.path.join(d, "current"))

    def path(self, name):
        return os.path.join(self.dir, "www", name)

    def test_a_file_rewritten_in_place_with_the_same_size(self):
        old = self.warm("/same.txt")
        client = self.keep_alive()
        self.assertEqual(self.fetch_on(client, "/same.txt").body, old.body)
        rewrite_in_place(self.path("same.txt"), b"same.txt: VERSION TWO\n")
        self.assertServes("/same.txt", b"same.txt: VERSION TWO\n", old, client)

    def test_a_file_rewritten_in_place_with_another_size(self):
        old = self.warm("/longer.txt")
        rewrite_in_place(self.path("longer.txt"), b"longer.txt: version two, longer\n")
        self.assertServes("/longer.txt", b"longer.txt: version two, longer\n", old)
        rewrite_in_place(self.path("longer.txt"), b"3\n")
        self.assertServes("/longer.txt", b"3\n")

    def test_a_rewrite_within_the_same_mtime_second(self):
        # Dated within the very second of the first version (another ns).
        old = self.warm("/second.txt")
        st = os.stat(self.path("second.txt"))
        rewrite_in_place(self.path("second.txt"), b"second.txt: version TWO\n")
        os.utime(self.path("second.txt"), ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        self.assertServes("/second.txt", b"second.txt: version TWO\n", old)

    def test_a_rewrite_that_puts_the_mtime_back(self):
        # cp -p, or a reproducible build's fixed date: same size, same mtime.
        old = self.warm("/putback.txt")
        st = os.stat(self.path("putback.txt"))
        rewrite_in_place(self.path("putback.txt"), b"putback.txt: version TWO\n")
        os.utime(self.path("putback.txt"), ns=(st.st_atime_ns, st.st_mtime_ns))
        self.assertEqual(os.stat(self.path("putback.txt")).st_mtime_ns, st.st_mtime_ns)
        self.assertServes("/putback.txt", b"putback.txt: version TWO\n", old)

    def test_a_file_replaced_by_rename(self):
        old = self.warm("/renamed.txt")
        client = self.keep_alive()
        self.fetch_on(client, "/renamed.txt")
        tmp = self.path(".renamed.txt.tmp")
        write(tmp, "renamed.txt: deployed atomically\n", HOUR_AGO)
        os.rename(tmp, self.path("renamed.txt"))
        self.assertServes("/renamed.txt", b"renamed.txt: deployed atomically\n", old, client)

    def test_a_file_deeper_down_and_its_directory_replaced(self):
        old = self.warm("/sub/deep/file.txt")
        # A whole directory swapped by rename: the file's own directory is
        # not the one that changed.
        write(self.path("sub.new/deep/file.txt"), "deep: version two\n", HOUR_AGO)
        os.rename(self.path("sub"), self.path("sub.old"))
        os.rename(self.path("sub.new"), self.path("sub"))
        self.assertServes("/sub/deep/file.txt", b"deep: version two\n", old)
        shutil.rmtree(self.path("sub.old"))
        os.unlink(self.path("sub/deep/file.txt"))
        for _ in range(TRIES):
            self.assertEqual(self.fetch("/sub/deep/file.txt").status, 404)

    def test_a_precompressed_twin_that_appears(self):
        gz = "Accept-Encoding: gzip\r\n"
        for _ in range(WARM):
            r = self.fetch("/twin.txt", gz)
            self.assertIsNone(r.header("content-encoding"))
        write(self.path("twin.txt.gz"), b"\x1f\x8b pretend gzip", HOUR_AGO)
        for _ in range(TRIES):
            r = self.fetch("/twin.txt", gz)
            self.assertEqual(r.header("content-encoding"), "gzip", r)
            self.assertEqual(r.body, b"\x1f\x8b pretend gzip")

    def test_the_docroot_switched_by_a_symlink(self):
        old = self.warm("/deployed/app.js")
        self.assertEqual(old.body, b"app of release 1\n")
        self.warm("/deployed/only-in-1.txt")
        client = self.keep_alive()
        self.fetch_on(client, "/deployed/app.js")
        switch_symlink(os.path.join(self.dir, "current"), "releases/2")
        self.assertServes("/deployed/app.js", b"app of release 2\n", old, client)
        for _ in range(TRIES):
            self.assertEqual(self.fetch("/deployed/only-in-1.txt").status, 404)
            self.assertEqual(self.fetch("/deployed/only-in-2.txt").body, b"release 2\n")
        # The old release can go.
        shutil.rmtree(os.path.join(self.dir, "releases", "1"))
        self.assertServes("/deployed/app.js", b"app of release 2\n", client=client)


PHP_CONF = """\
threads = 2
request_timeout = 5s
keep_alive_timeout = 30s
listener 127.0.0.1:{port}
upstream php {
    server = unix:{dir}/php/php.sock
    max_conns = 4
}
site {
    root = {dir}/current
    fastcgi / {
        upstream = php
        index = index.php
        fallback = /index.php
    }
}
"""

SCRIPT = b"""<?php
echo "release ", basename(dirname(__FILE__)), " ", basename(__FILE__),
     " ", $_SERVER['SCRIPT_FILENAME'], "\\n";
"""


class Php(Fetching, PhpTestCase):
    CONF = PHP_CONF
    POOLS = {"php": 2}

    @classmethod
    def setUpDir(cls, d):
        for release in ["r1", "r2"]:
            base = os.path.join(d, "releases", release)
            write(os.path.join(base, "index.php"), SCRIPT, HOUR_AGO)
            write(os.path.join(base, "page.php"), SCRIPT, HOUR_AGO)
            write(os.path.join(base, "style.css"), f"/* {release} */\n", HOUR_AGO)
        write(os.path.join(d, "releases", "r2", "new.php"), SCRIPT, HOUR_AGO)
        os.symlink("releases/r1", os.path.join(d, "current"))

    def roundtrip(self, data, timeout=10.0):
        return super().roundtrip(data, timeout, require_length=False)

    def fetch_on(self, client, path, extra=""):
        client.send(get(path, extra=extra))
        return client.response(require_length=False)

    def expected(self, release, script):
        # SCRIPT_FILENAME in the release (nginx's $realpath_root): PHP's
        # realpath cache would map current/ to the old release for minutes.
        return (f"release {release} {script} {self.dir}/releases/{release}/{script}\n").encode()

    def test_a_symlink_switch_runs_the_new_release(self):
        for _ in range(WARM):
            self.assertEqual(self.fetch("/page.php").body, self.expected("r1", "page.php"))
            self.assertEqual(self.fetch("/new.php").status, 404)
        old_css = self.warm("/style.css")
        self.assertEqual(old_css.body, b"/* r1 */\n")
        client = self.keep_alive()
        self.fetch_on(client, "/page.php")

        switch_symlink(os.path.join(self.dir, "current"), "releases/r2")
        for _ in range(TRIES):
            # A script only the new release has runs (it was a 404 a moment
            # ago), and the others are the new ones.
            self.assertEqual(self.fetch("/new.php").body, self.expected("r2", "new.php"))
            self.assertEqual(self.fetch("/page.php").body, self.expected("r2", "page.php"))
            self.assertEqual(self.fetch_on(client, "/page.php").body,
                             self.expected("r2", "page.php"))
        self.assertServes("/style.css", b"/* r2 */\n", old_css, client)

        shutil.rmtree(os.path.join(self.dir, "releases", "r1"))
        for _ in range(TRIES):
            self.assertEqual(self.fetch("/").body, self.expected("r2", "index.php"))
            self.assertEqual(self.fetch("/page.php").body, self.expected("r2", "page.php"))

    def test_a_script_added_and_removed_is_seen_at_once(self):
        path = os.path.join(self.dir, "current", "added.php")
        for _ in range(WARM):  # the front controller answers for it
            self.assertIn(b"index.php", self.fetch("/added.php/x").body)
        write(path, SCRIPT)
        release = os.path.basename(os.path.realpath(os.path.join(self.dir, "current")))
        for _ in range(TRIES):
            self.assertEqual(self.fetch("/added.php/x").body, self.expected(release, "added.php"))
        os.unlink(path)
        for _ in range(TRIES):
            self.assertIn(b"index.php", self.fetch("/added.php/x").body)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
