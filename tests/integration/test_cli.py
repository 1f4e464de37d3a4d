#!/usr/bin/env python3
"""The weft binary's command line, run for real: exit codes, messages, and
every example in conf/ passing `weft -t`.

    test_cli.py WEFT_BINARY CONF_DIR
"""
import os
import subprocess
import sys
import tempfile
import unittest

WEFT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/release/weft")
CONF = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "conf")


def weft(*args, cwd=None, env=None):
    return subprocess.run([WEFT, *args], capture_output=True, text=True, timeout=20,
                          cwd=cwd, env=env)


class CommandLine(unittest.TestCase):
    def test_version_and_help(self):
        r = weft("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^weft \d+\.\d+\.\d+\n$")
        r = weft("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--listen ADDR", r.stdout)

    def test_bad_usage_exits_2(self):
        for args, message in [
            (["-x"], "weft: unknown option '-x'"),
            (["-c"], "weft: -c needs a value"),
            (["-c", "a.conf", "--listen", "*:80"], "do not go together"),
            (["--listen", "8080"], "weft: --listen: expected host:port"),
            (["--php", "nowhere"], "weft: --php: expected host:port"),
        ]:
            with self.subTest(args=args):
                r = weft(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)

    def test_every_example_in_conf_checks_clean(self):
        examples = [f for f in os.listdir(CONF) if f.endswith(".conf") and f != "php-fpm-pool.conf"]
        self.assertGreaterEqual(len(examples), 2)
        for name in examples:
            with self.subTest(name=name):
                r = weft("-t", "-c", os.path.join(CONF, name))
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("is fine", r.stdout)

    def test_a_bad_configuration_exits_1_with_file_line_column(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.conf")
            with open(path, "w") as f:
                f.write("threads = 1\nkeepalive_timeout = 5s\n")
            r = weft("-t", "-c", path)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr, f"weft: {path}:2:1: unknown key 'keepalive_timeout' in the "
                                       "top level (did you mean 'keep_alive_timeout'?)\n")
            r = weft("-c", os.path.join(d, "missing.conf"))
            self.assertEqual(r.returncode, 1)
            self.assertIn("cannot read it: No such file or directory", r.stderr)

    def test_environment_variables_reach_the_configuration(self):
        r = weft("-t", "-c", os.path.join(CONF, "weft.conf"),
                 env={**os.environ, "WEFT_ROOT": "/srv/x"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("files from /srv/x", r.stdout)

    def test_no_arguments_means_the_current_directory_on_8080(self):
        with tempfile.TemporaryDirectory() as d:
            r = weft("-t", cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("listening on http://127.0.0.1:8080/", r.stdout)
            self.assertIn("files from " + os.path.realpath(d), r.stdout)

    def test_listen_root_php_without_a_file(self):
        with tempfile.TemporaryDirectory() as d:
            r = weft("-t", "--listen", "[::1]:9090", "--root", d, "--php", "unix:/run/php.sock")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("listening on http://[::1]:9090/", r.stdout)
            self.assertIn("PHP from " + os.path.realpath(d) + " via unix:/run/php.sock", r.stdout)
        r = weft("--root", "/nonexistent/dir")
        self.assertEqual(r.returncode, 1)
        self.assertIn("--root /nonexistent/dir is not a directory", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
