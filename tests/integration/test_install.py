#!/usr/bin/env python3
"""weft installed as a Debian package installs it: `cmake --install` of this
build into a DESTDIR (prefix /usr, then /usr/local), and the .deb `cpack`
makes from it, read with dpkg-deb (contents, control fields, conffiles,
maintainer scripts) and extracted, never installed on this machine. The
installed binary runs, the packaged configuration checks clean, the units
run the installed binary with that configuration (systemd-analyze verify),
the logs it names are those logrotate rotates, the man pages render
without a warning and document every option and every configuration key,
and the maintainer scripts, run with every command they call stubbed,
call what Debian's packages call, the same on a second run.

    test_install.py WEFT_BINARY BUILD_DIR SOURCE_DIR VERSION CMAKE CPACK
"""
import configparser
import fnmatch
import gzip
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

WEFT, BUILD, SOURCE, VERSION, CMAKE, CPACK = (
    sys.argv[1:7] if len(sys.argv) >= 7 else
    ["build/release/weft", "build/release", ".", "0.1.0", "cmake", "cpack"])
BUILD, SOURCE = os.path.abspath(BUILD), os.path.abspath(SOURCE)

# Every file `cmake --install --prefix /usr` puts down, and so the .deb.
INSTALLED = {
    "usr/sbin/weft",
    "etc/weft/weft.conf",
    "etc/logrotate.d/weft",
    "lib/systemd/system/weft.service",
    "lib/systemd/system/weft.socket",
    "usr/share/man/man8/weft.8.gz",
    "usr/share/man/man5/weft.conf.5.gz",
    "usr/share/doc/weft/README.md",
    "usr/share/doc/weft/from-nginx.md",
} | {"usr/share/doc/weft/examples/" + name
     for name in os.listdir(os.path.join(SOURCE, "conf")) if name.endswith(".conf")}
CONFFILES = ["/etc/weft/weft.conf", "/etc/logrotate.d/weft"]
SCRIPTS = ["postinst", "prerm", "postrm"]


def run(*args, env=None, **kwargs):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60,
                          env=env, **kwargs)


def files_under(root):
    found = set()
    for directory, _, names in os.walk(root):
        for name in names:
            found.add(os.path.relpath(os.path.join(directory, name), root))
    return found


def install(root, prefix):
    env = dict(os.environ, DESTDIR=root)
    r = run(CMAKE, "--install", BUILD, "--prefix", prefix, env=env)
    if r.returncode != 0:
        raise AssertionError(f"cmake --install --prefix {prefix}: {r.stdout}{r.stderr}")


def unit(path):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # keys keep their case
    with open(path) as f:
        parser.read_string(f.read())
    return parser


def directives(path):
    """The config's `key = value` and `listener X` lines outside comments."""
    found = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            m = re.match(r"^(\w+)\s*(?:=\s*|\s+)(\S.*)$", line)
            if m:
                found.setdefault(m.group(1), []).append(m.group(2).strip())
    return found


def render(page):
    """The page as `man` shows it, and what man and groff warned."""
    env = dict(os.environ, LC_ALL="C.UTF-8", MANROFFSEQ="", MANWIDTH="80")
    shown = run("man", "-E", "UTF-8", "-l", "-Tutf8", page, env=env)
    warned = run("man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", page, env=env)
    plain = run("col", "-b", input=shown.stdout)
    return plain.stdout, shown.stderr + warned.stderr


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="weft-install-")
        cls.root = os.path.join(cls.tmp, "usr-prefix")
        cls.local = os.path.join(cls.tmp, "local-prefix")
        install(cls.root, "/usr")
        install(cls.local, "/usr/local")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, relative):
        return os.path.join(self.root, relative)

    def test_every_file_goes_where_debian_puts_it(self):
        self.assertEqual(files_under(self.root), INSTALLED)
        self.assertTrue(os.path.isdir(self.path("var/log/weft")))
        self.assertTrue(os.access(self.path("usr/sbin/weft"), os.X_OK))
        for name in INSTALLED - {"usr/sbin/weft"}:
            self.assertEqual(stat.S_IMODE(os.stat(self.path(name)).st_mode), 0o644, name)

    def test_the_installed_binary_runs(self):
        r = run(self.path("usr/sbin/weft"), "--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"weft {VERSION}\n")

    def test_the_packaged_configuration_serves_var_www_html_on_80_as_www_data(self):
        try:
            pwd.getpwnam("www-data")
        except KeyError:
            self.skipTest("no user www-data here (Debian's base-passwd makes it)")
        r = run(self.path("usr/sbin/weft"), "-t", "-c", self.path("etc/weft/weft.conf"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("listening on http://0.0.0.0:80/", r.stdout)
        self.assertIn("listening on http://[::]:80/", r.stdout)
        self.assertIn("/  files from /var/www/html", r.stdout)
        config = directives(self.path("etc/weft/weft.conf"))
        self.assertEqual(config["user"], ["www-data"])

    def test_the_service_runs_the_installed_binary_on_the_installed_config(self):
        service = unit(self.path("lib/systemd/system/weft.service"))["Service"]
        self.assertEqual(service["ExecStart"], "/usr/sbin/weft -c /etc/weft/weft.conf")
        self.assertEqual(service["ExecStartPre"], "/usr/sbin/weft -t -c /etc/weft/weft.conf")
        self.assertEqual(service["Type"], "notify")
        # Started as root: weft opens listeners and logs, then drops to `user`.
        self.assertNotIn("User", service)
        self.assertEqual(service["ReadWritePaths"], "-/var/log/weft")

    def test_the_socket_listens_where_the_config_does(self):
        socket = unit(self.path("lib/systemd/system/weft.socket"))
        config = directives(self.path("etc/weft/weft.conf"))
        systemd_form = {"*:80": "0.0.0.0:80", "[::]:80": "[::]:80"}
        listeners = sorted(systemd_form[a] for a in config["listener"])
        with open(self.path("lib/systemd/system/weft.socket")) as f:
            streams = sorted(re.findall(r"^ListenStream=(\S+)$", f.read(), re.M))
        self.assertEqual(streams, listeners)
        self.assertEqual(socket["Socket"]["BindIPv6Only"], "ipv6-only")

    def test_systemd_reads_the_units_without_a_complaint(self):
        if not shutil.which("systemd-analyze"):
            self.skipTest("no systemd-analyze (Debian's systemd package)")
        units = os.path.join(self.tmp, "units")
        os.makedirs(units, exist_ok=True)
        # The one path systemd checks on this machine: the binary, as installed.
        for name in ["weft.service", "weft.socket"]:
            with open(self.path("lib/systemd/system/" + name)) as f:
                text = f.read().replace("/usr/sbin/weft", self.path("usr/sbin/weft"))
            with open(os.path.join(units, name), "w") as f:
                f.write(text)
        r = run("systemd-analyze", "verify", os.path.join(units, "weft.service"),
                os.path.join(units, "weft.socket"))
        self.assertEqual((r.returncode, r.stderr), (0, ""))

    def test_logrotate_rotates_the_logs_the_config_writes(self):
        config = directives(self.path("etc/weft/weft.conf"))
        with open(self.path("etc/logrotate.d/weft")) as f:
            rotate = f.read()
        pattern = re.search(r"^(/\S+)\s*\{", rotate, re.M).group(1)
        for key in ["access_log", "error_log"]:
            self.assertTrue(fnmatch.fnmatch(config[key][0], pattern), (key, pattern))
            self.assertTrue(config[key][0].startswith("/var/log/weft/"))
        self.assertIn("create 0640 www-data adm", rotate)
        self.assertIn("systemctl kill --signal=USR1 weft.service", rotate)

    def test_another_prefix_moves_the_packaged_paths_with_it(self):
        local = os.path.join(self.local, "usr/local")
        service = unit(os.path.join(local, "lib/systemd/system/weft.service"))["Service"]
        self.assertEqual(service["ExecStart"],
                         "/usr/local/sbin/weft -c /usr/local/etc/weft/weft.conf")
        self.assertTrue(os.access(os.path.join(local, "sbin/weft"), os.X_OK))
        config = directives(os.path.join(local, "etc/weft/weft.conf"))
        self.assertEqual(config["error_log"], ["/usr/local/var/log/weft/error.log"])
        with open(os.path.join(local, "etc/weft/weft.conf")) as f:
            self.assertIn("/usr/local/share/doc/weft/examples/", f.read())
        with open(os.path.join(local, "etc/logrotate.d/weft")) as f:
            self.assertIn("/usr/local/var/log/weft/*.log {", f.read())
        self.assertTrue(os.path.isdir(os.path.join(local, "var/log/weft")))
        self.assertEqual(files_under(self.local),
                         {"usr/local/" + p.removeprefix("usr/") for p in INSTALLED})

    def test_man_pages_are_compressed_as_debian_does(self):
        for page in ["usr/share/man/man8/weft.8.gz", "usr/share/man/man5/weft.conf.5.gz"]:
            with open(self.path(page), "rb") as f:
                head = f.read(10)
            # gzip -9n: no name stored (FLG 0), no time stamp (MTIME 0),
            # best compression (XFL 2).
            self.assertEqual((head[:4], head[4:8], head[8]), (b"\x1f\x8b\x08\x00", b"\0" * 4, 2),
                             page)
            source = os.path.join(SOURCE, "man", os.path.basename(page)[:-3])
            with gzip.open(self.path(page)) as packed, open(source, "rb") as plain:
                self.assertEqual(packed.read(), plain.read())

    def test_man_pages_render_without_a_warning(self):
        if not shutil.which("man") or not shutil.which("groff"):
            self.skipTest("no man or groff (Debian's man-db and groff-base)")
        for page in ["usr/share/man/man8/weft.8.gz", "usr/share/man/man5/weft.conf.5.gz"]:
            text, warnings = render(self.path(page))
            self.assertEqual(warnings, "", page)
            self.assertGreater(len(text.splitlines()), 50, page)
            source = os.path.join(SOURCE, "man", os.path.basename(page)[:-3])
            r = run("groff", "-ww", "-z", "-man", source)
            self.assertEqual((r.returncode, r.stderr), (0, ""), page)

    def test_weft_8_documents_every_option_and_signal(self):
        if not shutil.which("man"):
            self.skipTest("no man (Debian's man-db)")
        text, _ = render(self.path("usr/share/man/man8/weft.8.gz"))
        usage = run(self.path("usr/sbin/weft"), "--help").stdout
        options = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", usage))
        self.assertGreaterEqual(options, {"-c", "-t", "--listen", "--root", "--php", "--help"})
        for option in options:
            self.assertTrue(re.search(r"(?m)^ {7}" + re.escape(option) + r"\b", text), option)
        for signal in ["SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1"]:
            self.assertTrue(re.search(r"(?m)^ {7}" + signal + r"\b", text), signal)
        for section in ["SYNOPSIS", "OPTIONS", "SIGNALS", "FILES", "EXIT STATUS", "SEE ALSO"]:
            self.assertTrue(re.search(r"(?m)^" + section + "$", text), section)

    def test_weft_conf_5_documents_every_key_and_its_example_loads(self):
        if not shutil.which("man"):
            self.skipTest("no man (Debian's man-db)")
        text, _ = render(self.path("usr/share/man/man5/weft.conf.5.gz"))
        with open(os.path.join(SOURCE, "src/lib/config/parser.cpp")) as f:
            # Every key table's rows, and the section keywords.
            keys = set(re.findall(r'^\s*\{"([a-z_]+)",', f.read(), re.M))
        keys |= {"listener", "include", "upstream", "site", "response", "redirect", "files",
                 "fastcgi", "pubsub", "headers", "params", "shutdown_timeout", "drain_delay"}
        self.assertGreater(len(keys), 50)
        for key in sorted(keys):
            self.assertTrue(re.search(r"(?m)^ {7}(add )?" + re.escape(key) + r"\b", text), key)
        example = text.split("\nEXAMPLES\n", 1)[1].split("\nSEE ALSO\n", 1)[0]
        example = "\n".join(example.splitlines()[2:])  # its first line is prose
        conf = os.path.join(self.tmp, "example.conf")
        with open(conf, "w") as f:
            f.write(example)
        r = run(self.path("usr/sbin/weft"), "-t", "-c", conf)
        self.assertEqual(r.returncode, 0, r.stderr + example)


@unittest.skipUnless(shutil.which("dpkg-deb"), "no dpkg-deb (Debian's dpkg)")
class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="weft-cpack-")
        r = run(CPACK, "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B", cls.tmp)
        if r.returncode != 0:
            raise AssertionError(f"cpack: {r.stdout}{r.stderr}")
        arch = run("dpkg", "--print-architecture").stdout.strip()
        cls.deb = os.path.join(cls.tmp, f"weft_{VERSION}-1_{arch}.deb")
        cls.arch = arch
        cls.files = os.path.join(cls.tmp, "files")
        cls.control = os.path.join(cls.tmp, "control")
        for option, where in [("-x", cls.files), ("-e", cls.control)]:
            r = run("dpkg-deb", option, cls.deb, where)
            if r.returncode != 0:
                raise AssertionError(f"dpkg-deb {option}: {r.stderr}")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def field(self, name):
        r = run("dpkg-deb", "-f", self.deb, name)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def test_contents_are_the_install_tree_owned_by_root(self):
        r = run("dpkg-deb", "-c", self.deb)
        self.assertEqual(r.returncode, 0, r.stderr)
        listed = {}
        for line in r.stdout.splitlines():
            mode, owner, _size, _date, _time, path = line.split(None, 5)
            listed[path] = (mode, owner)
        files = {p[2:] for p, (mode, _) in listed.items() if mode.startswith("-")}
        self.assertEqual(files, INSTALLED)
        self.assertIn("./var/log/weft/", listed)
        self.assertEqual({owner for _, owner in listed.values()}, {"root/root"})
        self.assertEqual(listed["./usr/sbin/weft"][0], "-rwxr-xr-x")
        self.assertEqual(files_under(self.files), INSTALLED)

    def test_control_fields(self):
        self.assertEqual(self.field("Package"), "weft")
        self.assertEqual(self.field("Version"), f"{VERSION}-1")
        self.assertEqual(self.field("Architecture"), self.arch)
        self.assertEqual(self.field("Section"), "httpd")
        self.assertRegex(self.field("Maintainer"), r"^[^<>]+ <[^<>@]+@[^<>]+>$")
        self.assertRegex(self.field("Depends"), r"(^|, )libc6 \(>= [\d.]+\)")
        self.assertIn("/etc/weft/weft.conf", self.field("Description"))
        r = run("dpkg-deb", "-I", self.deb)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ["control", "conffiles", "md5sums", *SCRIPTS]:
            self.assertRegex(r.stdout, r"\b" + name + r"\b")

    def test_conffiles_are_the_configuration_and_logrotate(self):
        with open(os.path.join(self.control, "conffiles")) as f:
            self.assertEqual(f.read().split(), CONFFILES)
        for path in CONFFILES:
            self.assertTrue(os.path.isfile(self.files + path), path)

    def test_maintainer_scripts_are_executable_posix_sh_with_set_e(self):
        for name in SCRIPTS:
            path = os.path.join(self.control, name)
            with self.subTest(script=name):
                self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o755)
                with open(path) as f:
                    text = f.read()
                self.assertTrue(text.startswith("#!/bin/sh\n"))
                self.assertRegex(text, r"(?m)^set -e$")
                for shell in ["sh", "dash"]:
                    if shutil.which(shell):
                        r = run(shell, "-n", path)
                        self.assertEqual((r.returncode, r.stderr), (0, ""), shell)
                # An action dpkg never passes is refused before anything is
                # touched: the scripts read their arguments as dpkg gives them.
                r = run("sh", path, "no-such-action")
                self.assertEqual(r.returncode, 1)
                self.assertIn("unknown action 'no-such-action'", r.stderr)

    def run_script(self, name, *args, statoverride=False, was_enabled=True):
        """The script as dpkg runs it, with every command it calls a stub
        that logs its arguments: PATH holds the stubs alone, so a command
        without one fails the script instead of touching this machine."""
        stubs = os.path.join(self.tmp, "stubs")
        log = os.path.join(self.tmp, "calls.log")
        os.makedirs(stubs, exist_ok=True)
        status = {"dpkg-statoverride": 0 if statoverride else 1,
                  "deb-systemd-helper": 0 if was_enabled else 1}
        for command in ["mkdir", "chown", "chmod", "rm", "getent", "systemctl",
                        "deb-systemd-invoke", "dpkg-statoverride", "deb-systemd-helper"]:
            path = os.path.join(stubs, command)
            with open(path, "w") as f:
                f.write('#!/bin/sh\nprintf \'%s %s\\n\' "${0##*/}" "$*" >> "$STUB_LOG"\n'
                        f"exit {status.get(command, 0)}\n")
            os.chmod(path, 0o755)
        if os.path.exists(log):
            os.remove(log)
        r = run("/bin/sh", os.path.join(self.control, name), *args,
                env={"PATH": stubs, "STUB_LOG": log})
        self.assertEqual((r.returncode, r.stderr), (0, ""), (name, args))
        with open(log) if os.path.exists(log) else open(os.devnull) as f:
            return f.read().splitlines()

    def test_the_scripts_call_what_debian_calls_and_again_alike(self):
        systemd_runs = os.path.isdir("/run/systemd/system")
        started = ["systemctl --system daemon-reload",
                   "deb-systemd-invoke start weft.service"] if systemd_runs else []
        log_directory = ["mkdir -p /var/log/weft", "dpkg-statoverride --list /var/log/weft",
                         "getent group adm", "chown root:adm /var/log/weft",
                         "chmod 0755 /var/log/weft"]
        enabled = ["deb-systemd-helper unmask weft.service",
                   "deb-systemd-helper --quiet was-enabled weft.service",
                   "deb-systemd-helper enable weft.service"]
        first = self.run_script("postinst", "configure", "")
        self.assertEqual(first, log_directory + enabled + started)
        self.assertEqual(self.run_script("postinst", "configure", ""), first)
        # An administrator's statoverride and `systemctl disable` stand.
        upgrade = self.run_script("postinst", "configure", "0.0.9-1", statoverride=True,
                                  was_enabled=False)
        self.assertEqual(upgrade[:2], log_directory[:2])
        self.assertEqual(upgrade[2:4], enabled[:2])
        self.assertEqual(upgrade[4], "deb-systemd-helper update-state weft.service")
        self.assertNotIn("chown", " ".join(upgrade))
        self.assertEqual(upgrade[5:], [c.replace("start", "restart") for c in started])
        stopped = ["deb-systemd-invoke stop weft.socket",
                   "deb-systemd-invoke stop weft.service"] if systemd_runs else []
        self.assertEqual(self.run_script("prerm", "remove"), stopped)
        self.assertEqual(self.run_script("prerm", "upgrade", "0.1.1-1"), [])
        self.assertEqual(self.run_script("postrm", "purge"),
                         ["rm -rf /var/log/weft",
                          "deb-systemd-helper purge weft.service weft.socket"])

    def test_the_packaged_binary_runs(self):
        r = run(os.path.join(self.files, "usr/sbin/weft"), "--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"weft {VERSION}\n")
        with open(os.path.join(self.files, "lib/systemd/system/weft.service")) as f:
            self.assertIn("\nExecStart=/usr/sbin/weft -c /etc/weft/weft.conf\n", f.read())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
