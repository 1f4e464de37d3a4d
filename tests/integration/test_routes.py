#!/usr/bin/env python3
"""Routes: a handler serves a prefix, one exact path, or a path pattern (a
glob over the whole path, a name pattern over the last segment). A site
tries its exact routes first, then its patterns in the order written, then
the longest prefix; a redirect carries the rest of the path only on a prefix
route. The real binary, asked with curl.

    test_routes.py WEFT_BINARY
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import WEFT, ServerTestCase, write  # noqa: E402

# Handlers are written in an order that is not the lookup's: the exact
# routes last, a prefix before the patterns that take paths beneath it.
CONF = """\
threads = 2
listener 127.0.0.1:{port}
site {
    root = {dir}/www
    files /x {
    }
    response /w {
        body = the prefix /w
    }
    response /w/{index,api}.php {
        body = entry point
    }
    response *.css {
        body = a stylesheet
    }
    files /p {
    }
    response /p/{a,b}.txt {
        body = first pattern
    }
    response /p/*.txt {
        body = second pattern
    }
    redirect /old/*.html {
        to = /new/
    }
    redirect /legacy {
        to = /x
    }
    redirect exact / {
        to = /wiki/Main_Page
    }
    response exact /w/api.php {
        body = exact route
    }
}
"""


class Routes(ServerTestCase):
    CONF = CONF

    @classmethod
    def setUpDir(cls, d):
        www = os.path.join(d, "www")
        write(os.path.join(www, "robots.txt"), "robots, served by nobody\n")
        write(os.path.join(www, "x", "hello.txt"), "hello from /x\n")
        write(os.path.join(www, "x", "style.css"), "the file, never served\n")
        write(os.path.join(www, "x", "style.css.map"), "a map\n")
        write(os.path.join(www, "p", "c.txt"), "c as a file\n")
        write(os.path.join(www, "p", "d.html"), "d as a file\n")

    def assertBody(self, path, status, body):
        r = self.curl(path)
        self.assertEqual((r.status, r.body.decode()), (status, body), path)

    def test_an_exact_route_serves_its_path_only(self):
        r = self.curl("/")
        self.assertEqual(r.status, 301)
        self.assertEqual(r.header("location"), "/wiki/Main_Page")
        # No prefix '/' exists: any other path is nobody's.
        self.assertEqual(self.curl("/robots.txt").status, 404)
        self.assertEqual(self.curl("/anything/else").status, 404)

    def test_a_redirect_on_an_exact_route_appends_only_the_query(self):
        r = self.curl("/?title=Special:Random")
        self.assertEqual(r.status, 301)
        self.assertEqual(r.header("location"), "/wiki/Main_Page?title=Special:Random")

    def test_a_redirect_on_a_pattern_route_does_not_append_the_path(self):
        r = self.curl("/old/a/../page.html")  # curl resolves the dots: /old/page.html
        self.assertEqual(r.status, 301)
        self.assertEqual(r.header("location"), "/new/")
        self.assertEqual(self.curl("/old/dir/page.html").status, 404)  # '*' is one segment

    def test_a_redirect_on_a_prefix_route_still_appends_the_rest(self):
        r = self.curl("/legacy/hello.txt")
        self.assertEqual(r.status, 301)
        self.assertEqual(r.header("location"), "/x/hello.txt")

    def test_a_prefix_route_serves_what_no_other_route_takes(self):
        self.assertBody("/x/hello.txt", 200, "hello from /x\n")
        self.assertBody("/x/style.css.map", 200, "a map\n")

    def test_a_glob_route_takes_its_paths_from_the_prefix_beneath(self):
        self.assertBody("/w/index.php", 200, "entry point")
        self.assertBody("/w/other.php", 200, "the prefix /w")
        self.assertBody("/w/indexapi.php", 200, "the prefix /w")
        self.assertBody("/w/sub/index.php", 200, "the prefix /w")

    def test_a_name_pattern_route_matches_the_last_segment_anywhere(self):
        self.assertBody("/x/style.css", 200, "a stylesheet")
        self.assertBody("/deep/down/a.css", 200, "a stylesheet")
        self.assertBody("/a.css", 200, "a stylesheet")

    def test_exact_routes_come_first_then_patterns_in_order_then_prefixes(self):
        # exact /w/api.php is written after the glob that matches it too.
        self.assertBody("/w/api.php", 200, "exact route")
        # Two patterns match /p/a.txt: the first written wins.
        self.assertBody("/p/a.txt", 200, "first pattern")
        self.assertBody("/p/b.txt", 200, "first pattern")
        self.assertBody("/p/c.txt", 200, "second pattern")
        # Neither pattern: the prefix.
        self.assertBody("/p/d.html", 200, "d as a file\n")

    def test_start_up_and_check_print_routes_as_written(self):
        with open(self.weft.out_path) as f:
            printed = f.read()
        checked = subprocess.run([WEFT, "-t", "-c", self.weft.conf_path], capture_output=True,
                                 text=True, timeout=30)
        self.assertEqual(checked.returncode, 0, checked.stderr)
        for out in (printed, checked.stdout + checked.stderr):
            for route in ["exact /  redirect 301 to /wiki/Main_Page", "/w/{index,api}.php  response",
                          "*.css  response", "exact /w/api.php  response", "/x  files"]:
                self.assertIn(f"weft:   {route}", out)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
