#!/usr/bin/env python3
"""`weft -t` against a run of the same file: -t builds the handlers as a run
does but leaves the disk alone (no root opened, no log file), so it refuses
what the configuration itself lacks and passes what only this machine lacks.
Its listing is each handler's describe(), in the file's order.

    test_cli_check.py WEFT_BINARY
"""
import os
import subprocess
import sys
import tempfile
import unittest

WEFT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/release/weft")


def weft(*args):
    return subprocess.run([WEFT, *args], capture_output=True, text=True, timeout=20)


class CheckAgainstRun(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def conf(self, text):
        path = os.path.join(self.dir.name, "w.conf")
        with open(path, "w") as f:
            f.write("listener 127.0.0.1:1\n" + text)
        return path

    def test_a_handler_without_any_root_is_refused_by_both(self):
        for kind, keys in (("files", ""), ("fastcgi", "pass = 127.0.0.1:9\n")):
            with self.subTest(kind=kind):
                path = self.conf(f"site {{\n {kind} /app {{\n{keys} }}\n}}\n")
                message = f"weft: {kind} /app: no root: set one in the handler or its site\n"
                for args in (["-t", "-c", path], ["-c", path]):
                    r = weft(*args)
                    self.assertEqual((r.returncode, r.stderr), (1, message), args)

    def test_what_only_this_machine_lacks_passes_the_check_but_not_a_run(self):
        missing = os.path.join(self.dir.name, "missing")
        for text, refusal in (
            (f"site {{\n root = {missing}\n fastcgi / {{\n pass = 127.0.0.1:9\n static = on\n }}\n}}\n",
             f"weft: fastcgi /: cannot open the root {missing}: No such file or directory\n"),
            (f"site {{\n root = {missing}\n files / {{\n }}\n}}\n",
             f"weft: files /: cannot open the root {missing}: No such file or directory\n"),
            (f"access_log = {missing}/a.log\nsite {{\n root = {self.dir.name}\n files / {{\n }}\n}}\n",
             f"weft: cannot open access log {missing}/a.log: No such file or directory\n"),
        ):
            with self.subTest(refusal=refusal):
                path = self.conf(text)
                r = weft("-t", "-c", path)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(r.stdout.endswith(f"weft: {path} is fine\n"), r.stdout)
                r = weft("-c", path)
                self.assertEqual((r.returncode, r.stderr), (1, refusal))

    def test_the_listing_describes_every_kind_in_the_files_order(self):
        root = self.dir.name
        path = self.conf(f"""upstream php {{
 server = unix:/run/php.sock
}}
site {{
 host = b.example
 root = {root}/
 fastcgi / {{
  upstream = php
 }}
 files /static {{
  root = /srv/static
 }}
}}
site {{
 response /health {{
  status = 204
 }}
 redirect /old {{
  to = https://example.com/new
  status = 308
 }}
 fastcgi /app {{
  root = /srv/app
  pass = 127.0.0.1:9000
 }}
}}
""")
        r = weft("-t", "-c", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The backend line depends on WEFT_IO_BACKEND: test_io_backend.py's.
        listing = "".join(line for line in r.stdout.splitlines(True)
                          if not line.startswith("weft: io_backend = "))
        self.assertEqual(listing, f"""weft: listening on http://127.0.0.1:1/
weft:   /  PHP from {root}/ via upstream php
weft:   /static  files from /srv/static
weft:   /health  response 204
weft:   /old  redirect 308 to https://example.com/new
weft:   /app  PHP from /srv/app via 127.0.0.1:9000
weft: {path} is fine
""")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
