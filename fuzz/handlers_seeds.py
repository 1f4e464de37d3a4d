#!/usr/bin/env python3
"""Writes the seed corpus of handlers_fuzzer (corpus/handlers/) and its
reproducers of known bugs (regressions/handlers/), in the input format
README.md describes: parts separated by a line "@@", each starting with a
byte that says what it is.

    fuzz/handlers_seeds.py    (from anywhere: paths are the script's own)
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SEPARATOR = b"\n@@\n"

# Part kinds (low 2 bits) and flags.
CLIENT, CGI, RAW = 0, 1, 2
SHUT_CLIENT = 0x04
AT_ONCE, CLOSE_AFTER, IN_PIECES, SHUT_AFTER, SMALL_RECORDS, NO_END = 0x04, 0x08, 0x10, 0x20, 0x40, 0x80


def client(data, shut=False):
    return bytes([CLIENT | (SHUT_CLIENT if shut else 0)]) + data


def cgi(text, flags=0, piece=None):
    head = bytes([CGI | flags | (IN_PIECES if piece else 0)])
    return head + (bytes([piece - 1]) if piece else b"") + text


def raw(data, flags=0, piece=None):
    head = bytes([RAW | flags | (IN_PIECES if piece else 0)])
    return head + (bytes([piece - 1]) if piece else b"") + data


def record(kind, content=b"", request_id=1, padding=0):
    return struct.pack(">BBHHBB", 1, kind, request_id, len(content), padding, 0) + content + \
        b"\0" * padding


def end_request(request_id=1, app_status=0, protocol_status=0):
    return record(3, struct.pack(">IB3x", app_status, protocol_status), request_id)


def get(path, host="x", extra=b""):
    return b"GET " + path + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\n" + extra + b"\r\n"


def post(path, body, extra=b""):
    return (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Length: " +
            str(len(body)).encode() + b"\r\n" + extra + b"\r\n" + body)


OK = b"Status: 200 OK\r\nContent-Type: text/html\r\n\r\n<p>hello</p>\n"
DEEP = b"/long/" + b"/".join(bytes([c]) * 46 for c in b"abcdef") + b"/"
OTHER_DEEP = b"/" + b"/".join(bytes([c]) * 46 for c in b"bcdef") + b"/"  # the other site's root is /long/aaa...

SEEDS = {
    # Response rules: error pages routed to files and to the backend.
    "error_page_static_to_php": [client(get(b"/static/missing.txt", extra=b"Range: bytes=0-1\r\n")),
                                 cgi(OK)],
    "error_page_unrouted_site": [client(get(b"/nothing", host="nowhere.example"))],
    "error_page_backend_down": [client(get(b"/index.php")), raw(b"", CLOSE_AFTER | AT_ONCE),
                                cgi(OK)],
    "error_page_head_file": [client(b"HEAD /static/.secret HTTP/1.1\r\nHost: x\r\n\r\n")],
    # The fastcgi handler: scripts, index scripts, PATH_INFO, queries.
    "index_script": [client(get(b"/")), cgi(OK)],
    "dir_index_script": [client(get(b"/dir/")), cgi(b"Content-Type: text/plain\r\n\r\nindex")],
    "path_info_query": [client(get(b"/app.php/user/7?a=1&b=%20")),
                        cgi(b"Status: 404 Not Found\r\nX-Powered-By: PHP\r\n"
                            b"Set-Cookie: a=b\r\nSet-Cookie: c=d\r\n\r\nmissing")],
    "deep_index_script": [client(get(DEEP)), cgi(OK)],
    "other_site": [client(get(OTHER_DEEP + b"x.php", host="other.example") +
                          get(OTHER_DEEP, host="OTHER.example:8080") +
                          get(b"/" + b"b" * 46 + b"/", host="other.example")), cgi(OK), cgi(OK)],
    "head_with_length": [client(b"HEAD /app.php HTTP/1.1\r\nHost: x\r\n\r\n"),
                         cgi(b"Content-Length: 5\r\nContent-Type: text/plain\r\n\r\n")],
    "content_length_mismatch": [client(get(b"/app.php")),
                                cgi(b"Content-Length: 50\r\n\r\nshort")],
    "no_head": [client(get(b"/app.php")), raw(end_request())],
    "bad_head": [client(get(b"/app.php")), cgi(b"no colon here\r\n\r\n")],
    "stderr_then_stdout": [client(get(b"/app.php")),
                           raw(record(7, b"PHP Warning: x\nsecond line\n") +
                               record(6, b"Content-Type: text/plain\r\n\r\nbody", padding=4) +
                               record(6) + end_request())],
    "bad_record_version": [client(get(b"/app.php")), raw(b"\x02" + record(6, b"x")[1:])],
    "data_after_end": [client(get(b"/app.php") + get(b"/index.php")),
                       raw(record(6, OK) + record(6) + end_request() + b"junk"), cgi(OK)],
    "streamed_in_pieces": [client(get(b"/app.php")),
                           cgi(b"Content-Type: text/plain\r\n\r\n" + b"0123456789" * 300,
                               flags=SMALL_RECORDS, piece=100)],
    "streamed_no_end": [client(get(b"/app.php")),
                        cgi(b"Content-Type: text/plain\r\n\r\n" + b"x" * 5000,
                            flags=NO_END | CLOSE_AFTER, piece=256)],
    "answer_at_once": [client(post(b"/app.php", b"a=1" * 100)), cgi(OK, flags=AT_ONCE | CLOSE_AFTER)],
    # Request bodies: Content-Length, chunked (spooled), 100-continue, too large.
    "post_body": [client(post(b"/app.php", b"name=value&x=" + b"y" * 3000,
                              b"Content-Type: application/x-www-form-urlencoded\r\n")), cgi(OK)],
    "chunked_body": [client(b"POST /app.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"5\r\nhello\r\n2000\r\n" + b"z" * 0x2000 + b"\r\n0\r\n\r\n"), cgi(OK)],
    "expect_continue": [client(b"POST /app.php HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                               b"Expect: 100-continue\r\n\r\n"),
                        client(b"body"), cgi(OK)],
    "body_too_large": [client(b"POST /app.php HTTP/1.1\r\nHost: x\r\nContent-Length: 999999\r\n\r\n"),
                       cgi(OK)],
    # Kept backend connections: reuse, PHP-FPM's shutdown after END_REQUEST, a retry.
    "kept_connection": [client(get(b"/app.php") + get(b"/dir/other.php")), cgi(OK), cgi(OK)],
    "backend_shuts_after_end": [client(get(b"/app.php") + get(b"/app.php")),
                                cgi(OK, flags=SHUT_AFTER), cgi(OK)],
    "backend_closes_early": [client(get(b"/app.php")), raw(b"", flags=CLOSE_AFTER)],
    # Local redirects (RFC 3875 §6.2.2): to a script, to a static file, to a
    # directory without an index script, off the site.
    "redirect_to_script": [client(get(b"/app.php")), cgi(b"Location: /dir/other.php?x=1\r\n\r\n"),
                           cgi(OK)],
    "redirect_to_static": [client(get(b"/app.php")), cgi(b"Location: /page.html\r\n\r\n")],
    "redirect_to_plain_dir": [client(get(b"/app.php")), cgi(b"Location: /plain/\r\n\r\n")],
    "redirect_to_dir_no_slash": [client(get(b"/app.php")), cgi(b"Location: /dir\r\n\r\n"), cgi(OK)],
    # Client redirects to a local path: a Status makes one, and so does a
    # network-path reference ("//host/...").
    "redirect_with_status": [client(get(b"/app.php")),
                             cgi(b"Status: 302 Found\r\nLocation: /dir/\r\n\r\n")],
    "redirect_network_path": [client(get(b"/app.php")), cgi(b"Location: //dir/\r\n\r\n")],
    "redirect_absolute": [client(get(b"/app.php")),
                          cgi(b"Location: http://example.com/\r\n\r\n")],
    "redirect_loop": [client(get(b"/app.php"))] + [cgi(b"Location: /app.php\r\n\r\n")] * 10,
    # The fastcgi handler's own static files, denials, fallback.
    "static_via_fastcgi": [client(get(b"/page.html") + get(b"/dir") + get(b"/plain/")
                                  + get(b"/.hidden") + get(b"/escape.txt"))],
    "front_controller": [client(get(b"/front/no/such/page") + get(b"/front/private/secret.txt")),
                         cgi(OK)],
    "pass_phtml": [client(get(b"/pass/") + get(b"/pass/x.php/info")), cgi(OK), cgi(OK)],
    # The files handler: ranges, conditionals, precompressed twins, listings.
    "files_ranges": [client(get(b"/static/big.txt", extra=b"Range: bytes=0-9,100-199,-5\r\n")
                            + get(b"/static/a.txt", extra=b"If-None-Match: *\r\n"))],
    "files_gzip_listing": [client(get(b"/static/a.txt", extra=b"Accept-Encoding: gzip\r\n")
                                  + get(b"/static/sub/") + get(b"/static/deny/x.txt")
                                  + get(b"/static/.secret") + get(b"/follow/escape.txt")
                                  + get(b"/follow/") + get(b"/follow/static/a.txt")
                                  + get(b"/follow/dangling"))],
    "response_redirect": [client(get(b"/health") + get(b"/old/path?q") +
                                 b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")],
    # The status handler: a format by the query, by Accept, refused.
    "status_formats": [client(get(b"/status") + get(b"/status?format=json")
                              + get(b"/status?format=prometheus") + get(b"/status?format=xml")
                              + get(b"/status", extra=b"Accept: text/plain; version=0.0.4\r\n")
                              + get(b"/status", extra=b"Accept: text/html;q=0.5, */*\r\n")
                              + get(b"/app.php") + get(b"/status?format=text")), cgi(OK)],
    # The client's bytes in pieces, and left open (keep-alive).
    "client_in_pieces": [client(b"GET /app"), client(b".php HTTP/1.1\r\nHo"),
                         client(b"st: x\r\n\r\n"), cgi(OK)],
    "client_shuts_down": [client(get(b"/app.php") + get(b"/page.html"), shut=True), cgi(OK)],
    # Aliases (a prefix's directory, an exact route's file), deny patterns,
    # the scripts allow-list: all answered by weft but for the listed ones.
    "aliased_files": [client(get(b"/assets/a.txt", extra=b"Accept-Encoding: gzip\r\n")
                             + get(b"/assets") + get(b"/assets/sub/") + get(b"/assets/sub/b.css")
                             + get(b"/assets/deny/x.txt") + get(b"/assets/sub/link.txt")
                             + get(b"/assets/../outside.txt") + get(b"/assets%2f..%2fapp.php")
                             + get(b"/favicon.ico") + get(b"/favicon.ico/x"))],
    "aliased_scripts": [client(get(b"/aliased/") + get(b"/aliased/lib.php")
                               + get(b"/aliased/other.php/x/y") + get(b"/aliased/file.txt")
                               + get(b"/aliased/no/such") + get(b"/aliased")),
                        cgi(OK), cgi(OK), cgi(OK)],
    "pipelined_mix": [client(get(b"/static/a.txt") + get(b"/app.php") +
                             b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" + get(b"/nothing.php")),
                      cgi(OK), cgi(OK)],
}


# --- WebSocket and SSE on `pubsub /live` ---------------------------------------

WS_KEY = b"dGhlIHNhbXBsZSBub25jZQ=="


def upgrade(path=b"/live/room", extra=b"", version=b"13", key=WS_KEY, http=b"HTTP/1.1"):
    return (b"GET " + path + b" " + http + b"\r\nHost: x\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: " + key + b"\r\n"
            b"Sec-WebSocket-Version: " + version + b"\r\n" + extra + b"\r\n")


def ws(opcode, payload=b"", fin=True, rsv=0, mask=b"\0\0\0\0", length=None):
    """A client frame; the zero mask key by default leaves the payload as
    written, so the fuzzer's mutations of it are mutations of the message."""
    n = len(payload) if length is None else length
    head = bytes([(0x80 if fin else 0) | rsv << 4 | opcode])
    bit = 0x80 if mask is not None else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 65536:
        head += bytes([bit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([bit | 127]) + struct.pack(">Q", n)
    if mask is None:
        return head + payload
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_close(code=None, reason=b""):
    return ws(8, b"" if code is None else struct.pack(">H", code) + reason)


TEXT, BINARY, CONT, PING, PONG = 1, 2, 0, 9, 10

SEEDS.update({
    # A chat member: messages (to its own topic), a ping, fragments with a
    # ping between, a pong, the close handshake.
    "ws_chat": [client(upgrade(extra=b"Sec-WebSocket-Protocol: other, chat\r\n")
                       + ws(TEXT, b"hello") + ws(PING, b"p")
                       + ws(TEXT, b"caf\xc3", fin=False) + ws(PING) + ws(CONT, b"\xa9!")
                       + ws(BINARY, b"\xff\x00", mask=b"\x37\xfa\x21\x3d") + ws(PONG, b"x")),
                client(ws_close(1000, b"bye"))],
    # Frames after the handshake in pieces, a header split between them; the
    # client hangs up with no close.
    "ws_in_pieces": [client(upgrade(b"/live/a/b.c")),
                     client(ws(TEXT, b"one two three")[:1]),
                     client(ws(TEXT, b"one two three")[1:7]),
                     client(ws(TEXT, b"one two three")[7:] + ws(TEXT, b"x" * 300)[:3], shut=True)],
    # A frame that draws no answer and the client's end in one edge (a short
    # read hid the end: the session stayed), and a control frame with FIN
    # clear and the end (a closing session outlived a stop with no grace).
    # The fuzzer's find, in CI: both leaked the server's fd.
    "ws_pong_and_hangup": [client(upgrade()), client(ws(PONG, b"x"), shut=True)],
    "ws_failure_and_hangup": [client(upgrade(b"/live/b")), client(b"\n", shut=True)],
    # Each fails the connection: 1002, 1007, 1009.
    "ws_unmasked": [client(upgrade() + ws(TEXT, b"hi", mask=None))],
    "ws_rsv": [client(upgrade() + ws(TEXT, b"hi", rsv=4))],
    "ws_opcode": [client(upgrade() + ws(0xB, b"x"))],
    "ws_long_ping": [client(upgrade() + ws(PING, b"p" * 126))],
    "ws_fragmented_ping": [client(upgrade() + ws(PING, b"p", fin=False))],
    "ws_bad_utf8_split": [client(upgrade() + ws(TEXT, b"ok \xe2\x82", fin=False)),
                          client(ws(CONT, b"(", fin=True) + ws_close(1000))],
    "ws_bad_close_code": [client(upgrade() + ws_close(1005))],
    "ws_one_byte_close": [client(upgrade() + ws(8, b"\x03"))],
    "ws_close_reason_utf8": [client(upgrade() + ws_close(4000, b"\xff"))],
    "ws_too_big": [client(upgrade() + ws(BINARY, length=5000)), client(b"z" * 64)],
    "ws_too_big_fragments": [client(upgrade() + ws(TEXT, b"a" * 600, fin=False)
                                    + ws(CONT, b"b" * 600))],
    "ws_orphan_continuation": [client(upgrade() + ws(CONT, b"x"))],
    "ws_data_inside_message": [client(upgrade() + ws(TEXT, b"a", fin=False) + ws(TEXT, b"b"))],
    # Handshakes refused (426, 400, HTTP/1.0) before one that succeeds, and a
    # publish before it on the same connection.
    "ws_handshakes": [client(upgrade(version=b"8") + upgrade(key=b"short")
                             + upgrade(http=b"HTTP/1.0")
                             + post(b"/live/room", b"published first")
                             + upgrade() + ws(TEXT, b"after") + ws_close(1001))],
    # SSE: a subscriber resuming after an id; the client leaves.
    "sse_subscribe": [client(get(b"/live/news", extra=b"Accept: text/event-stream\r\n"
                                 b"Last-Event-ID: 5\r\n"), shut=True)],
    # The handler's other answers: methods, topics, body and topic limits.
    "pubsub_refusals": [client(b"PUT /live/x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
                               + b"HEAD /live/x HTTP/1.1\r\nHost: x\r\n\r\n"
                               + get(b"/live/") + get(b"/live/a//b") + get(b"/live/x")
                               + post(b"/live/big", b"b" * 2000) + post(b"/live/t1", b"1")
                               + post(b"/live/t2", b"2") + post(b"/live/t3", b"3"))],
})

# --- A kept connection's next request, on a ring that moves bytes --------------
# (handlers_uring_fuzzer): the first request is there before weft looks; each
# later client part comes once the connection has parked idle, so a ring
# receive takes it (on epoll: a readiness, then a read).

SEEDS.update({
    "ring_kept_alive": [client(get(b"/page.html")), client(get(b"/app.php")), cgi(OK),
                        client(get(b"/health"))],
    # Fills the receive's 4 KiB buffer: the rest is read by a syscall.
    "ring_big_request": [client(get(b"/health")),
                         client(get(b"/app.php", extra=b"X-Pad: " + b"p" * 6000 + b"\r\n")),
                         cgi(OK)],
    "ring_post_body": [client(get(b"/health")), client(post(b"/app.php", b"b" * 6000)), cgi(OK)],
    "ring_pipelined": [client(get(b"/health")),
                       client(get(b"/static/a.txt") + get(b"/app.php") + get(b"/old/x")
                              + b"HEAD /page.html HTTP/1.1\r\nHost: x\r\n\r\n"), cgi(OK)],
    # A head begun in a receive waits for the rest by readiness.
    "ring_head_in_pieces": [client(get(b"/health")), client(b"GET /app"),
                            client(b".php HTTP/1.1\r\nHost: x\r\n\r\n"), cgi(OK)],
    "ring_expect_continue": [client(get(b"/health")),
                             client(b"POST /app.php HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                                    b"Expect: 100-continue\r\n\r\n"),
                             client(b"body"), cgi(OK)],
    # Responses too large for a send slot (a file by sendfile, a long CGI
    # body in pieces) after one that went in a slot: each settles it first.
    "ring_large_responses": [client(get(b"/health")),
                             client(get(b"/static/big.txt") + get(b"/health") + get(b"/app.php")),
                             cgi(b"Content-Type: text/plain\r\n\r\n" + b"0123456789" * 2000,
                                 piece=200)],
    # A slot's send still in flight when the connection closes (an orphan).
    "ring_close_after_send": [client(get(b"/health")),
                              client(get(b"/page.html", extra=b"Connection: close\r\n"))],
    # A WebSocket and an SSE subscriber on a kept connection: the handshake's
    # send settles before the session writes by syscalls, and the frames the
    # receive brought with the upgrade go to the session.
    "ring_ws_after_keepalive": [client(get(b"/health")),
                                client(upgrade() + ws(TEXT, b"hello") + ws(PING, b"p")),
                                client(ws_close(1000, b"bye"))],
    "ring_sse_after_keepalive": [client(get(b"/health")),
                                 client(get(b"/live/news", extra=b"Accept: text/event-stream\r\n")),
                                 client(b"", shut=True)],
})

# Crash on the code this target was written against: kept out of the corpus
# (CI runs the corpus) until the library is fixed. Each is named for its bug.
# (regressions/handlers/found_redirect_to_index_dir is the fuzzer's own find
# of the first, from redirect_with_status in 9,340 runs: "S#tatus".)
REGRESSIONS = {
    # A local redirect to a directory whose index is a script: ScriptCall::run
    # sized redirect_path_ for the target and the index name, and resolve()
    # wrote the index name after a second copy of the path (heap overflow).
    "redirect_to_index_dir": [client(get(b"/app.php")), cgi(b"Location: /dir/\r\n\r\n"), cgi(OK)],
    "redirect_to_deep_index_dir": [client(get(b"/app.php")),
                                   cgi(b"Location: " + DEEP + b"\r\n\r\n"), cgi(OK)],
}


def write(directory, seeds):
    os.makedirs(directory, exist_ok=True)
    for name, parts in seeds.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(SEPARATOR.join(parts))


if __name__ == "__main__":
    write(os.path.join(HERE, "corpus", "handlers"), SEEDS)
    write(os.path.join(HERE, "regressions", "handlers"), REGRESSIONS)
