#!/usr/bin/env python3
"""What an attacker and real deployments tried against the files and
redirect handlers:

- the add-a-slash 301 names the normalised path, never the raw one
  (//evil.example/../dir and /\\evil.example/../dir would be other sites);
- a redirect carries no // nor /\\ into its Location, and `redirect /`
  sends / to exactly `to`;
- /.well-known is served, other hidden files are not;
- editor backups, leftovers and PHP sources are never served, nor listed;
- `index` is a list, tried in order;
- an answer the files cache keeps for a directory's index is never the
  answer to the index's own path, which is checked on its own;
- a symlink that stays inside the root is served even when absolute; one
  that leaves it is refused.

    test_hardening.py WEFT_BINARY
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import ServerTestCase, get  # noqa: E402

SECRET = b"TOP SECRET"

CONF = """\
threads = 1
listener 127.0.0.1:{port}
site {
    host = redirect.test
    redirect / {
        to = /wiki/Main_Page
    }
    redirect /go {
        to = /
    }
    redirect /away {
        to = https://b.example/
    }
}
site {
    host = hidden-index.test
    root = {dir}/hidden-index
    files / {
        index = none.html .front.html
    }
}
site {
    root = {dir}/www
    files / {
        index = index.html index.htm
        listing = on
    }
}
"""


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


class Hardening(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        www = os.path.join(d, "www")
        write(os.path.join(www, "dir", "index.html"), "dir\n")
        write(os.path.join(www, "htm", "index.htm"), "htm\n")
        write(os.path.join(www, "both", "index.html"), "html first\n")
        write(os.path.join(www, "both", "index.htm"), "htm second\n")
        write(os.path.join(www, ".well-known", "acme-challenge", "Tok3n"), "Tok3n.thumbprint")
        write(os.path.join(www, ".well-known", "security.txt"), "Contact: mailto:a@b.example\n")
        write(os.path.join(www, ".well-known", ".secret"), SECRET)
        write(os.path.join(www, ".env"), SECRET)
        write(os.path.join(www, "style.css"), "body {}\n")
        for name in ("config.php~", "config.php.bak", "#config.php#", ".config.php.swp",
                     "config.php.orig", "config.php.save", "config.phtml", "config.php",
                     "CONFIG.PHP"):
            write(os.path.join(www, "app", name), b"<?php $password = 'TOP SECRET';")
        write(os.path.join(www, "app", "readme.txt"), "readme\n")
        write(os.path.join(d, "outside.txt"), SECRET)
        write(os.path.join(d, "hidden-index", ".front.html"), "front\n")
        # Absolute links: one to a file in the root, one out of it.
        os.symlink(os.path.join(www, "style.css"), os.path.join(www, "abs-inside.css"))
        os.symlink(os.path.join(d, "outside.txt"), os.path.join(www, "abs-outside.txt"))
        os.symlink(os.path.join(www, "dir"), os.path.join(www, "abs-dir"))

    def location(self, request):
        c, r = self.roundtrip(request)
        self.assertIn(r.status, (301, 302), r)
        return r.header("location")

    def test_the_add_a_slash_redirect_never_names_another_site(self):
        for raw, expected in [("/dir", "/dir/"), ("//evil.example/../dir", "/dir/"),
                              ("/\\evil.example/../dir", "/dir/"), ("/./dir", "/dir/"),
                              ("/dir?a=1", "/dir/?a=1"), ("/%64ir", "/dir/")]:
            with self.subTest(path=raw):
                self.assertEqual(self.location(get(raw)), expected)

    def test_a_redirect_carries_neither_double_slashes_nor_backslashes(self):
        host = "redirect.test"
        for raw, expected in [("/go//evil.example", "/evil.example"),
                              ("/go/\\evil.example", "/%5Cevil.example"),
                              ("/go/\\/evil.example", "/%5C/evil.example"),
                              ("/away//x", "https://b.example/x"),
                              ("/go/a//b", "/a/b")]:
            with self.subTest(path=raw):
                location = self.location(get(raw, host=host))
                self.assertEqual(location, expected)
                self.assertFalse(location.startswith(("//", "/\\")), location)

    def test_redirect_slash_sends_the_root_to_exactly_to(self):
        self.assertEqual(self.location(get("/", host="redirect.test")), "/wiki/Main_Page")
        self.assertEqual(self.location(get("/?x=1", host="redirect.test")),
                         "/wiki/Main_Page?x=1")
        # Beneath it, the rest is carried over as before.
        self.assertEqual(self.location(get("/a", host="redirect.test")), "/wiki/Main_Page/a")

    def test_well_known_is_served_and_other_hidden_files_are_not(self):
        r = self.curl("/.well-known/acme-challenge/Tok3n")
        self.assertEqual((r.status, r.body), (200, b"Tok3n.thumbprint"))
        self.assertEqual(self.curl("/.well-known/security.txt").status, 200)
        for path in ("/.well-known/.secret", "/.env", "/.well-known/../.env"):
            with self.subTest(path=path):
                r = self.curl(path)
                self.assertEqual(r.status, 403, r.body)
                self.assertNotIn(SECRET, r.body)

    def test_backups_leftovers_and_php_sources_are_never_served(self):
        for name in ("config.php~", "config.php.bak", "%23config.php%23", ".config.php.swp",
                     "config.php.orig", "config.php.save", "config.phtml", "config.php",
                     "CONFIG.PHP"):
            with self.subTest(name=name):
                r = self.curl("/app/" + name)
                self.assertEqual(r.status, 403, r.body)
                self.assertNotIn(SECRET, r.body)
        self.assertEqual(self.curl("/app/readme.txt").status, 200)
        listing = self.curl("/app/").body
        self.assertIn(b"readme.txt", listing)
        self.assertNotIn(b"config", listing)

    def test_index_is_a_list_tried_in_order(self):
        self.assertEqual(self.curl("/dir/").body, b"dir\n")
        r = self.curl("/htm/")
        self.assertEqual((r.status, r.body), (200, b"htm\n"))
        self.assertEqual(r.header("content-type").split(";")[0], "text/html")
        self.assertEqual(self.curl("/both/").body, b"html first\n")

    def test_a_hidden_index_is_served_for_its_directory_but_never_by_its_name(self):
        host = "hidden-index.test"
        # Twice each: the second is answered from the files cache.
        for _ in range(2):
            r = self.curl("/", host=host)
            self.assertEqual((r.status, r.body), (200, b"front\n"))
        for _ in range(2):
            self.assertEqual(self.curl("/.front.html", host=host).status, 403)

    def test_an_absolute_symlink_inside_the_root_is_served_and_one_outside_is_not(self):
        r = self.curl("/abs-inside.css")
        self.assertEqual((r.status, r.body), (200, b"body {}\n"))
        self.assertEqual(self.curl("/abs-dir/").body, b"dir\n")
        r = self.curl("/abs-outside.txt")
        self.assertEqual(r.status, 403)
        self.assertNotIn(SECRET, r.body)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
