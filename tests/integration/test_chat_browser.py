#!/usr/bin/env python3
"""conf/chat.conf's chat in Debian's headless Chromium, driven by
puppeteer-core from npm (installed as test_status_page.py does): a message
typed into one chat page appears in the other, markup shows as text, a page
joining late sees both from the history; and the room's events page
(EventSource) shows what a PHP script, running in a real php-fpm8.2 behind
the same weft, publishes with each of docs/pubsub.md's publish() functions,
taken from the doc as they are; when Chromium has gone, each session's
access-log line says how it ended.

weft runs conf/chat.conf itself (its ${VARS} pointing at a free port and at
conf/chat/) with threads = 2 in front and a fastcgi handler for the PHP
script added to its site.

    test_chat_browser.py WEFT_BINARY BUILD_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_support import Weft, free_port, wait_for  # noqa: E402
from php_support import PhpFpm, require_php_fpm  # noqa: E402
from test_status_page import require_browser  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.realpath(os.path.join(HERE, "..", ".."))
CHAT_CONF = os.path.join(SOURCE, "conf", "chat.conf")
CHAT_ROOT = os.path.join(SOURCE, "conf", "chat")
PUBSUB_DOC = os.path.join(SOURCE, "docs", "pubsub.md")

# Added at the end of chat.conf's site: the test's PHP scripts.
PHP_HANDLER = """\
    fastcgi /php {
        root = {dir}/www
        pass = unix:{dir}/php/php.sock
    }
"""

# Runs one of the doc's publish() functions (pasted in front of it) and
# answers with what it returned.
PUBLISH_SCRIPT = """\
<?php
{function}
$message = json_encode(['name' => 'php', 'text' => $_GET['text'], 'time' => time() * 1000]);
header('Content-Type: application/json');
echo json_encode(publish($_GET['room'], $message));
"""


def doc_publish_functions():
    """docs/pubsub.md's ```php blocks that define publish(), in order."""
    with open(PUBSUB_DOC) as f:
        blocks = re.findall(r"^```php\n(.*?)^```", f.read(), re.S | re.M)
    return [b for b in blocks if b.startswith("function publish(")]


def chat_conf(port):
    """chat.conf as it is, on 127.0.0.1:PORT (its default listener names
    8080), with two loops and the PHP handler before the site's end."""
    with open(CHAT_CONF) as f:
        text = f.read().rstrip()
    assert text.endswith("\n}"), "chat.conf no longer ends with its site's }"
    return "threads = 2\n" + text[:-1] + PHP_HANDLER + "}\n"


class ChatInChromium(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_php_fpm()
        cls.chromium, cls.node_path = require_browser()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.realpath(cls.tmp.name)
        cls.functions = doc_publish_functions()
        cls.port = free_port()
        cls.pool = None
        try:
            www = os.path.join(cls.dir, "www", "php")
            os.makedirs(www)
            for i, function in enumerate(cls.functions):
                with open(os.path.join(www, f"publish{i}.php"), "w") as f:
                    hub = function.replace("127.0.0.1:8080", f"127.0.0.1:{cls.port}")
                    f.write(PUBLISH_SCRIPT.replace("{function}", hub))
            cls.pool = PhpFpm(cls.dir, "php", 2)
            saved = dict(os.environ)
            os.environ.update({"WEFT_LISTEN": f"127.0.0.1:{cls.port}", "CHAT_ROOT": CHAT_ROOT})
            try:
                cls.weft = Weft(cls.dir, chat_conf(cls.port), port=cls.port)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        except BaseException:
            if cls.pool:
                cls.pool.stop()
            cls.tmp.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            code = cls.weft.stop()
            if code != 0:
                raise AssertionError(f"weft exited {code} on SIGTERM\n{cls.weft.stderr()[-3000:]}")
        finally:
            cls.pool.stop()
            cls.tmp.cleanup()

    def drive(self, args):
        env = dict(os.environ, NODE_PATH=self.node_path, HOME=self.dir)
        r = subprocess.run(["node", os.path.join(HERE, "chat_browser.js"), json.dumps(args)],
                           capture_output=True, text=True, timeout=150, env=env)
        lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
        self.assertTrue(lines, f"node said nothing: {r.stderr[-2000:]}")
        seen = json.loads(lines[-1])
        self.assertNotIn("error", seen, f"{seen.get('error')}\n{r.stderr[-2000:]}\n"
                                        f"weft: {self.weft.stderr()[-3000:]}")
        self.assertEqual(r.returncode, 0)
        return seen

    def test_two_pages_talk_a_late_one_reads_back_and_php_reaches_the_events_page(self):
        self.assertEqual(len(self.functions), 2, "docs/pubsub.md: the stream and curl publish()")
        base = f"http://127.0.0.1:{self.port}"
        first = "Hello from alice, ünïcødé ✓"
        hostile = '<img src=x onerror="document.title=\'owned\'"><b>bold</b> & "quotes"'
        php = [{"url": f"{base}/php/publish{i}.php?room=team/a.b&text=from+php+{i}",
                "text": f"from php {i}"} for i in range(len(self.functions))]
        seen = self.drive({"base": base, "chromium": self.chromium, "room": "team/a.b",
                           "first": first, "hostile": hostile, "php": php})
        self.assertEqual(seen["pageErrors"], [])
        self.assertEqual(seen["requestsFailed"], [])

        said = [("alice", first), ("bob", hostile)]
        # Each page shows each message once, as text, with its sender; the
        # sender's own message came back from the hub.
        for page in ("alice", "bob", "late"):
            with self.subTest(page=page):
                self.assertEqual([(m["name"], m["text"]) for m in seen[page]], said)
                self.assertEqual([m["elements"] for m in seen[page]], [0, 0])
        self.assertEqual(seen["aliceField"], "")
        self.assertNotIn("owned", seen["titles"])

        # The events page: the history, then both PHP messages, with ids
        # that only grow.
        self.assertEqual([(m["name"], m["text"]) for m in seen["events"]],
                         said + [("php", p["text"]) for p in php])
        ids = [int(m["id"].lstrip("#")) for m in seen["events"]]
        self.assertEqual(ids, sorted(set(ids)))
        # PHP's answers: the hub's JSON, with 4 subscribers (three chat
        # pages and the events page, spread over two loops).
        for answer in seen["php"]:
            self.assertEqual(answer["status"], 200, answer["body"])
            hub = json.loads(answer["body"])
            self.assertIsNotNone(hub, "publish() returned null: weft unreachable from PHP?\n"
                                      + self.pool.log()[-2000:])
            self.assertEqual(hub["subscribers"], 4)
            self.assertIn(hub["id"], ids)
        # The chat pages get PHP's messages too.
        self.assertEqual([(m["name"], m["text"]) for m in seen["bobAfter"]][2:],
                         [("php", p["text"]) for p in php])

        # Chromium is gone: each session's access-log line (chat.conf logs to
        # stderr), written as it ended, with its status and why it ended.
        ws = re.compile(r'"GET /live/team/a\.b HTTP/1\.1" 101 \d+ .* "ws 100[01] closed by client"$',
                        re.M)
        sse = re.compile(r'"GET /live/team/a\.b HTTP/1\.1" 200 \d+ .* "sse closed by client"$', re.M)
        ended = lambda: (len(ws.findall(self.weft.stderr())), len(sse.findall(self.weft.stderr())))
        wait_for(lambda: ended() == (3, 1), timeout=10)
        self.assertEqual(ended(), (3, 1), self.weft.stderr()[-3000:])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
