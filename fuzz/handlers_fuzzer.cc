// libFuzzer target for the handlers as they serve: a site of real `files`,
// `fastcgi`, `response`, `redirect` and `pubsub` handlers, built from a configuration
// by build_server() as the weft binary builds them, serves one client
// connection (a socketpair adopted by a Loop) through serve_connection. The
// fastcgi handlers' backend is scripted: a coroutine on the same loop,
// accepting on a unix socket, that answers each request with the next answer
// the input holds. The input chooses the client's bytes and every answer
// (README.md gives its format; handlers_seeds.py writes the seed corpus).
//
// Nothing waits on a clock: the configured timeouts are an hour and never
// fire. Whenever the loop is quiet (two polls in a row woke no task) the
// harness moves things on, one step per quiet spell, in this order: the next
// piece of a backend answer; the next piece of the client's bytes; the
// backend hangs up every connection; the client shuts down its side; the
// loop stops. A connection still running at that stop outlived its client
// and its backend, and so did a WebSocket or SSE session (no task: it owns the
// fd after the handshake) that kept the fd after the client's shutdown:
// WEFT_FUZZ_STRICT=1 aborts there, so the fuzzer keeps the input. Sessions
// left at the stop close with it (1001). Every input builds its own server, loop and fd table on a
// thread of its own (the handlers' per-thread caches go with it), so nothing carries over, and ends
// with as many fds open as it began with (checked).
//
// The handlers' error log (stderr) goes to /dev/null unless WEFT_FUZZ_LOG=1,
// which also shows what weft sent the client; the sanitizers' and
// libFuzzer's reports reach fd 2 either way.
//
// The handler is added as weft adds its own (takes_ring_input), so on a ring
// that moves bytes the connection's bytes go through it: a parked
// connection's next request comes in a ring receive, responses that fit a
// send slot go out in ring sends, and anything written by a syscall settles
// the send in flight first (loop/ring.hpp). handlers_fuzzer runs the loop on
// the backend WEFT_IO_BACKEND names (epoll when unset), handlers_uring_fuzzer
// (this source built with WEFT_FUZZ_URING=1) on a ring, or on epoll if the
// kernel refuses one, which it says once. On the ring, quiet still means
// quiet: a wake-up's completion comes in the loop's own enter, with those of
// the wake-ups before it (the tick's, say, after the receive of bytes the
// client wrote first). The sends of a connection closed with one in flight
// (orphans) end before the stop, as the kernel finishes a closed socket's
// bytes: the stop's zero grace would cancel them (the Ring would still
// close their fds, so the fd check cannot tell).

#include "build_server.hpp"
#include "config/parser.hpp"
#include "coro/coroutine.hpp"
#include "http/connection.hpp"
#include "loop/io.hpp"
#include "loop/io_backend.hpp"
#include "loop/loop.hpp"
#include "loop/ring.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace weft;
namespace fs = std::filesystem;

#if WEFT_FUZZ_URING
constexpr const char* kName = "handlers_uring_fuzzer";
IoBackend backend_wanted() {
    return IoBackend::uring;
}
#else
constexpr const char* kName = "handlers_fuzzer";
IoBackend backend_wanted() {
    return default_io_backend(); // WEFT_IO_BACKEND's, else epoll
}
#endif

// --- the input ------------------------------------------------------------------

// Parts are separated by this line; each starts with a byte that says what
// it is (low 2 bits) and how it behaves (the others).
constexpr std::string_view kSeparator = "\n@@\n";
constexpr std::size_t kMaxParts = 64;

enum Kind : std::uint8_t { kClient0 = 0, kCgiAnswer = 1, kRawAnswer = 2, kClient3 = 3 };

// A client part: the first is written before weft takes the connection,
// each next one once the loop is quiet.
constexpr std::uint8_t kShutClient = 0x04; // then shut down the write side; later parts dropped

// An answer part: a CGI response (head and body) that the backend sends as
// STDOUT records and END_REQUEST, or raw bytes sent as they are.
constexpr std::uint8_t kAtOnce = 0x04;       // answer without reading the request first
constexpr std::uint8_t kCloseAfter = 0x08;   // then close the connection (else keep it)
constexpr std::uint8_t kInPieces = 0x10;     // first payload byte + 1: the size of each write,
                                             // one write per quiet spell
constexpr std::uint8_t kShutAfter = 0x20;    // then shut down, drain until weft closes (PHP-FPM
                                             // at pm.max_requests); before kCloseAfter
constexpr std::uint8_t kSmallRecords = 0x40; // CGI: 7-byte STDOUT records
constexpr std::uint8_t kNoEnd = 0x80;        // CGI: no END_REQUEST

struct Answer {
    bool cgi;
    std::uint8_t flags;
    std::string_view payload;
};

struct Script {
    std::vector<std::string_view> client;
    bool shut_client = false; // after the last client part
    std::vector<Answer> answers;
};

Script parse(std::string_view input) {
    Script script;
    for (std::size_t parts = 0; parts < kMaxParts; ++parts) {
        const std::size_t end = input.find(kSeparator);
        std::string_view part = input.substr(0, end);
        input = end == std::string_view::npos ? std::string_view{}
                                              : input.substr(end + kSeparator.size());
        if (!part.empty()) {
            const auto head = static_cast<std::uint8_t>(part.front());
            part.remove_prefix(1);
            const auto kind = static_cast<Kind>(head & 3);
            if (kind == kCgiAnswer || kind == kRawAnswer) {
                script.answers.push_back({kind == kCgiAnswer, head, part});
            } else if (!script.shut_client) {
                script.client.push_back(part);
                script.shut_client = head & kShutClient;
            }
        }
        if (end == std::string_view::npos) break;
    }
    return script;
}

// --- FastCGI records, as a backend writes and reads them -------------------------------

constexpr std::uint8_t kBeginRequest = 1;
constexpr std::uint8_t kEndRequest = 3;
constexpr std::uint8_t kStdin = 5;
constexpr std::uint8_t kStdout = 6;

void append_record(std::string& out, std::uint8_t type, std::uint16_t id, std::string_view content,
                   std::size_t padding) {
    const char header[8] = {1,
                            static_cast<char>(type),
                            static_cast<char>(id >> 8),
                            static_cast<char>(id & 0xff),
                            static_cast<char>(content.size() >> 8),
                            static_cast<char>(content.size() & 0xff),
                            static_cast<char>(padding),
                            0};
    out.append(header, sizeof header);
    out.append(content);
    out.append(padding, '\0');
}

// A CGI response as PHP-FPM sends it: STDOUT records padded to 8 bytes, an
// empty one, END_REQUEST.
std::string cgi_records(std::string_view cgi, std::uint16_t id, std::uint8_t flags) {
    std::string out;
    const std::size_t most = flags & kSmallRecords ? 7 : 65535;
    while (!cgi.empty()) {
        const std::string_view content = cgi.substr(0, most);
        cgi.remove_prefix(content.size());
        append_record(out, kStdout, id, content, (8 - content.size() % 8) % 8);
    }
    append_record(out, kStdout, id, {}, 0);
    if (!(flags & kNoEnd)) append_record(out, kEndRequest, id, {"\0\0\0\0\0\0\0\0", 8}, 0);
    return out;
}

// --- the world every input shares ------------------------------------------------

struct World {
    std::string dir; // the temp dir: www/ (the document root), backend.sock
    int listener = -1;
    config::Config config;
    FILE* diagnostics = stderr; // the harness's own reports
    bool strict = false;
    bool log = false;          // also what weft sent the client, on `diagnostics`
    bool said_backend = false; // that the loop runs on another backend than asked
};

World* world = nullptr;

// The deep directory's first name: six of these, a to f, make a path of
// ~300 bytes.
constexpr std::string_view kDeepName = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

void write_file(const fs::path& path, std::string_view content) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
}

// The document root: scripts, a directory with an index script and one
// without, a deep one with a long path (~300 bytes), static files with a
// precompressed twin (under `files` and `fastcgi`; a script's too), dotfiles,
// symlinks inside and out.
void plant_tree(const fs::path& dir) {
    const fs::path www = dir / "www";
    for (const char* script :
         {"index.php", "app.php", "dir/index.php", "dir/other.php", "sub.php/index.php",
          "front/index.php", "pass/main.phtml", "pass/x.php", "dir/lib.php"})
        write_file(www / script, "<?php echo 'never run: the backend is scripted';\n");
    write_file(www / "page.html", "<p>a page</p>\n");
    write_file(www / "dir/file.txt", "a file beside an index script\n");
    write_file(www / "plain/note.txt", "a directory without an index\n");
    write_file(www / "plain/inner/deeper.txt", "deeper\n");
    write_file(www / ".hidden", "a dotfile\n");
    write_file(www / ".git/config", "[core]\n");
    write_file(www / "front/private/secret.txt", "denied\n");
    write_file(dir / "outside.txt", "outside the root\n");
    std::string big;
    for (int i = 0; big.size() < 20'000; ++i) big += "line " + std::to_string(i) + "\n";
    write_file(www / "static/big.txt", big);
    write_file(www / "static/a.txt", "static text\n");
    const std::string gzip_magic("\x1f\x8b\x08\0\0\0\0\0", 8);
    write_file(www / "static/a.txt.gz", gzip_magic);
    write_file(www / "static/sub/b.css", "b { }\n");
    // Twins under `fastcgi /` (precompressed = on): a static file's is
    // served, a script's never.
    write_file(www / "page.html.gz", gzip_magic);
    write_file(www / "dir/file.txt.br", "br");
    write_file(www / "app.php.gz", gzip_magic);
    write_file(www / "static/.secret", "a dotfile\n");
    write_file(www / "static/deny/x.txt", "denied\n");
    fs::path deep = www / "long";
    for (char c = 'a'; c < 'g'; ++c) deep /= std::string(kDeepName.size(), c);
    write_file(deep / "index.php", "<?php\n");
    write_file(deep / "x.php", "<?php\n");
    write_file(deep / "file.txt", "deep\n");
    fs::create_symlink("page.html", www / "link.html");
    fs::create_symlink("../outside.txt", www / "escape.txt");
    fs::create_symlink("dir", www / "dirlink");
    fs::create_symlink("../static/a.txt", www / "static/sub/link.txt");
    // The root of `files /follow`, which follows symlinks out of it.
    const fs::path follow = dir / "links/follow";
    fs::create_directories(follow);
    fs::create_symlink("../../www/page.html", follow / "page.html");
    fs::create_symlink("../../outside.txt", follow / "escape.txt");
    fs::create_symlink("../../www/static", follow / "static");
    fs::create_symlink("missing", follow / "dangling");
}

// The configuration: timeouts of an hour (nothing waits on a clock), a small
// body limit, a named upstream and a handler's own `pass`, both to the
// scripted backend; response rules on the site and handlers, with error
// pages routed to files and to the scripted backend, and one from a file.
std::string configuration(const std::string& dir) {
    std::string text = R"(threads = 1
keep_alive_timeout = 1h
request_timeout = 1h
body_timeout = 1h
send_timeout = 1h
max_request_body = 64k
upstream php {
    server = unix:DIR/backend.sock
    keepalive = 2
    max_conns = 2
    connect_timeout = 1h
    read_timeout = 1h
    queue_timeout = 1h
}
site {
    root = DIR/www
    headers {
        X-Site = fuzz
        remove X-Powered-By
    }
    error_page = 404 /static/sub/b.css
    error_page = 403 file DIR/www/page.html
    files /static {
        listing = on
        precompressed = on
        cache_control = max-age=60
        deny = /static/deny
        headers {
            X-Site = static
            add Link = "</a.css>; rel=preload"
        }
        error_page = 404 /front/index.php
    }
    files /follow {
        root = DIR/links
        follow_symlinks = on
        index = page.html
    }
    files /assets {
        alias = DIR/www/static
        listing = on
        precompressed = on
        deny = *.css /assets/**/deny/* composer.json
    }
    files exact /favicon.ico {
        alias = DIR/www/page.html
    }
    fastcgi /aliased {
        upstream = php
        alias = DIR/www/dir
        scripts = /aliased/{index,other}.php /aliased/x*.php
        deny = *.txt /aliased/private
        fallback = /aliased/index.php
    }
    fastcgi /front {
        upstream = php
        static = off
        fallback = /front/index.php
        deny = /front/private
        params {
            APP_ENV = fuzz
        }
    }
    fastcgi /pass {
        pass = unix:DIR/backend.sock
        extensions = .php .phtml
        index = main.phtml
    }
    fastcgi / {
        upstream = php
        precompressed = on
        cache_control = public
        expires = 1h
        headers {
            X-Powered-By = weft
        }
        error_page = 502 503 504 /pass/index.phtml
    }
    response /health {
        body = ok
    }
    pubsub /live {
        clients_publish = on
        publish_from = unix:  # the socketpair client: POSTs publish
        limit_conn = 2        # a subscriber holds its count for its life
        history = 3
        history_memory = 64k
        max_message = 1k
        max_queued = 4k
        max_topics = 2
        ping = 1h
        subprotocols = chat
    }
    status /status {
    }
    redirect /old {
        to = /new
        status = 308
    }
}
site {
    host = other.example
    root = DIR/www/long/DEEP
    fastcgi / {
        upstream = php
        follow_symlinks = on
    }
}
)";
    for (std::size_t at; (at = text.find("DIR")) != std::string::npos;) text.replace(at, 3, dir);
    const std::size_t deep = text.find("DEEP");
    text.replace(deep, 4, kDeepName);
    return text;
}

void remove_world() {
    if (!world) return;
    std::error_code ignored;
    fs::remove_all(world->dir, ignored);
}

// --- one input's run ----------------------------------------------------------------

constexpr std::size_t kFdTableSize = 4096;

// Closes an fd a task awaited, however the task ends.
struct Closer {
    int fd;
    ~Closer() { io::close(fd); }
};

constexpr std::uint64_t kMaxPolls = 20'000;
constexpr std::size_t kMaxPieces = 32; // writes per answer

class Session {
public:
    Session(Loop& loop, const Script& script, int client)
        : loop_(loop), script_(script), client_(client) {}

    // The client's first part, before weft takes the connection: as with
    // TCP_DEFER_ACCEPT, the request is there when it looks.
    void start() {
        if (!script_.client.empty()) unsent_ = script_.client[next_piece_++];
        pump_client();
    }
    // The tasks' bodies.
    void drive();
    void accept_backends();

private:
    // Tasks the driver may wake: backend connections, and those waiting to
    // write their next piece. Each registers itself for as long as it is in
    // the state, however it leaves it (an unwinding included).
    class Member {
    public:
        explicit Member(std::vector<Coroutine*>& list) : list_(list) {
            list_.push_back(Coroutine::current());
        }
        ~Member() { std::erase(list_, Coroutine::current()); }
        Member(const Member&) = delete;
        Member& operator=(const Member&) = delete;

    private:
        std::vector<Coroutine*>& list_;
    };

    void serve_backend(int fd);
    // Reads through the next request's empty STDIN record; false at the end
    // of the stream or on an error.
    bool read_request(int fd, std::string& in, std::uint16_t& id);
    bool send_answer(int fd, const Answer& answer, std::uint16_t id);
    // Writes what the client has to send, reads (and drops) what weft sent:
    // whether any byte moved.
    bool pump_client();
    // The next step when the loop is quiet; false when none is left.
    bool step();
    unsigned orphan_sends() const;

    Loop& loop_;
    const Script& script_;
    const int client_;
    std::size_t next_piece_ = 0; // of script_.client
    std::string_view unsent_;    // of the piece being written
    bool client_shut_ = false;
    bool server_closed_ = false;
    bool accepting_ = false;
    std::size_t next_answer_ = 0;
    std::vector<Coroutine*> backends_;
    std::vector<Coroutine*> waiting_pieces_;
};

void Session::drive() {
    // Woken once per poll of the loop: an eventfd written before each wait
    // raises an edge that the next poll reports.
    const int tick = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (tick < 0) std::abort();
    const Closer closer{tick};
    const Loop::Stats& stats = loop_.stats();
    std::uint64_t own = 1; // this task's resumes: the others' are progress
    std::uint64_t others = stats.resumes - own;
    int quiet = 0;
    for (std::uint64_t polls = 0; polls < kMaxPolls; ++polls) {
        const std::uint64_t one = 1;
        if (::write(tick, &one, sizeof one) != sizeof one) std::abort();
        io::wait(tick, kReadable);
        ++own;
        bool moved = pump_client();
        if (stats.resumes - own != others) {
            others = stats.resumes - own;
            moved = true;
        }
        if (moved) {
            quiet = 0;
        } else if (++quiet == 2) {
            quiet = 0;
            if (!step()) break;
        }
    }
    // Running now: the driver, the acceptor, backends, and a connection that
    // outlived its client and backend (parked ones are no task).
    const std::size_t stuck = loop_.live_tasks() - 1 - accepting_ - backends_.size();
    if (stuck && world->strict) {
        std::fprintf(world->diagnostics, "%s: %zu task(s) still running at the end\n", kName,
                     stuck);
        std::abort();
    }
    // A WebSocket or SSE session runs with no task: one that kept the
    // connection after the client hung up shows as the server's end still open.
    if (client_shut_ && !server_closed_ && world->strict) {
        std::fprintf(world->diagnostics, "%s: weft kept the connection after the client hung up\n",
                     kName);
        std::abort();
    }
    // The client reads all it is sent: a send in flight ends at once.
    if (const unsigned orphans = orphan_sends(); orphans && world->strict) {
        std::fprintf(world->diagnostics, "%s: %u send(s) of closed connections never ended\n",
                     kName, orphans);
        std::abort();
    }
    loop_.stop(std::chrono::milliseconds(0));
}

bool Session::step() {
    if (!waiting_pieces_.empty()) {
        loop_.wake(*waiting_pieces_.front(), 0);
        return true;
    }
    if (next_piece_ < script_.client.size()) {
        unsent_ = script_.client[next_piece_++];
        return true;
    }
    if (!backends_.empty()) {
        for (Coroutine* backend : std::vector<Coroutine*>(backends_)) loop_.cancel(*backend);
        return true;
    }
    if (!client_shut_) {
        ::shutdown(client_, SHUT_WR);
        client_shut_ = true;
        return true;
    }
    // The ring's sends of connections closed with one in flight (orphans)
    // end before the stop, as the kernel finishes a closed socket's bytes:
    // a stop would cancel them (the loop's grace is 0 here).
    return orphan_sends() != 0;
}

unsigned Session::orphan_sends() const {
    const Ring* ring = loop_.byte_ring();
    return ring ? ring->orphans() : 0;
}

bool Session::pump_client() {
    bool moved = false;
    while (!unsent_.empty() && !client_shut_) {
        const ssize_t n = ::send(client_, unsent_.data(), unsent_.size(), MSG_NOSIGNAL);
        if (n <= 0) {
            if (n < 0 && errno == EAGAIN) break;
            unsent_ = {}; // weft is gone
            break;
        }
        unsent_.remove_prefix(static_cast<std::size_t>(n));
        moved = true;
    }
    if (unsent_.empty() && next_piece_ == script_.client.size() && script_.shut_client &&
        !client_shut_) {
        ::shutdown(client_, SHUT_WR);
        client_shut_ = true;
        moved = true;
    }
    while (!server_closed_) {
        static char sink[64 * 1024];
        const ssize_t n = ::recv(client_, sink, sizeof sink, 0);
        if (n > 0) {
            if (world->log) std::fwrite(sink, 1, static_cast<std::size_t>(n), world->diagnostics);
            moved = true;
            continue;
        }
        if (n < 0 && errno == EAGAIN) break;
        server_closed_ = true; // EOF or a reset
        moved = true;
    }
    return moved;
}

void Session::accept_backends() {
    accepting_ = true;
    for (;;) {
        const int fd = io::accept(world->listener);
        if (fd < 0) {
            accepting_ = false;
            return;
        }
        if (!loop_.spawn([this, fd] { serve_backend(fd); })) io::close(fd);
    }
}

void Session::serve_backend(int fd) {
    const Closer closer{fd};
    Member member(backends_);
    std::string in;
    std::uint16_t id = 1;
    for (;;) {
        const bool none_left = next_answer_ == script_.answers.size();
        const bool at_once = !none_left && (script_.answers[next_answer_].flags & kAtOnce);
        if (!at_once && !read_request(fd, in, id)) return;
        // An answer is taken when it is due: requests on other connections
        // take the next ones meanwhile.
        if (next_answer_ == script_.answers.size()) return; // none left: hang up, as a crash would
        const Answer& answer = script_.answers[next_answer_++];
        if (!send_answer(fd, answer, id)) return;
        if (answer.flags & kShutAfter) {
            ::shutdown(fd, SHUT_WR);
            char drain[4096];
            while (io::read(fd, drain, sizeof drain) > 0) {
            }
            return;
        }
        if (answer.flags & kCloseAfter) return;
    }
}

bool Session::read_request(int fd, std::string& in, std::uint16_t& id) {
    std::size_t pos = 0;
    for (;;) {
        while (in.size() - pos >= 8) {
            const auto* h = reinterpret_cast<const unsigned char*>(in.data() + pos);
            const std::size_t length = static_cast<std::size_t>(h[4] << 8 | h[5]);
            const std::size_t size = 8 + length + h[6];
            if (in.size() - pos < size) break;
            pos += size;
            if (h[1] == kBeginRequest) id = static_cast<std::uint16_t>(h[2] << 8 | h[3]);
            if (h[1] == kStdin && length == 0) {
                in.erase(0, pos);
                return true;
            }
        }
        char buffer[4096];
        const ssize_t n = io::read(fd, buffer, sizeof buffer);
        if (n <= 0) return false;
        in.append(buffer, static_cast<std::size_t>(n));
    }
}

bool Session::send_answer(int fd, const Answer& answer, std::uint16_t id) {
    std::string_view payload = answer.payload;
    std::size_t piece = SIZE_MAX;
    if ((answer.flags & kInPieces) && !payload.empty()) {
        piece = static_cast<std::uint8_t>(payload.front()) + 1u;
        payload.remove_prefix(1);
    }
    const std::string records = answer.cgi ? cgi_records(payload, id, answer.flags) : std::string();
    const std::string_view bytes = answer.cgi ? std::string_view(records) : payload;
    piece = std::max(piece, (bytes.size() + kMaxPieces - 1) / kMaxPieces);
    for (std::size_t at = 0; at < bytes.size();) {
        const std::size_t n = std::min(piece, bytes.size() - at);
        if (io::write(fd, bytes.data() + at, n) < 0) return false;
        at += n;
        if (at < bytes.size()) {
            Member waiting(waiting_pieces_);
            if (weft::yield(yield_value(Op::suspend)) < 0) return false;
        }
    }
    return true;
}

// --- fds open, to check that an input leaves none behind --------------------------------

std::size_t open_fds() {
    std::size_t count = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (const dirent* e = ::readdir(d)) count += e->d_name[0] != '.';
        ::closedir(d);
    }
    return count;
}

void list_fds(FILE* out) {
    for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
        std::error_code error;
        std::fprintf(out, "  %s -> %s\n", entry.path().filename().c_str(),
                     fs::read_symlink(entry.path(), error).c_str());
    }
}

// Once per process: the loop does not run as asked, so the ring's byte path
// is not fuzzed (Loop::open's own line goes to the error log: /dev/null).
void say_backend(const Loop& loop, IoBackend wanted) {
    if (world->said_backend || wanted != IoBackend::uring) return;
    if (loop.backend() != IoBackend::uring) {
        const std::string& why = uring_unavailable();
        std::fprintf(world->diagnostics, "%s: no io_uring ring (%s): fuzzing on epoll\n", kName,
                     why.empty() ? "its setup failed" : why.c_str());
    } else if (!loop.byte_ring()) {
        std::fprintf(world->diagnostics,
                     "%s: the ring takes no provided buffers: its bytes go by syscalls\n", kName);
    } else {
        return;
    }
    world->said_backend = true;
}

// One input, on the calling thread: the server, a loop, the client's
// socketpair, the backend, until the loop stops.
void serve(const Script& script) {
    std::string error;
    // Built per input, and destroyed after the loop, as in main.cpp.
    std::unique_ptr<BuiltServer> built = build_server(world->config, error);
    if (!built) {
        std::fprintf(world->diagnostics, "%s: %s\n", kName, error.c_str());
        std::abort();
    }
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
        std::fprintf(world->diagnostics, "%s: socketpair: %s\n", kName, std::strerror(errno));
        std::abort();
    }
    FdTable table(kFdTableSize);
    Loop loop(table);
    const IoBackend wanted = backend_wanted();
    if (loop.open(wanted) != 0) std::abort();
    say_backend(loop, wanted);
    const http::Server& server = built->server;
    // As weft's own service adds it: its connections take the ring's bytes.
    const std::uint16_t handler =
        loop.add_handler([&server](int fd) { return http::serve_connection(fd, server); }, true);
    Session session(loop, script, pair[0]);
    session.start();
    loop.spawn([&session] { session.accept_backends(); });
    loop.spawn([&session] { session.drive(); });
    loop.defer([&loop, &pair, handler] { loop.adopt(pair[1], handler); });
    loop.run();
    ::close(pair[0]);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    ::signal(SIGPIPE, SIG_IGN); // as the binary: sendfile to a closed client
    world = new World;
    world->strict = std::getenv("WEFT_FUZZ_STRICT") != nullptr;
    std::string dir = (fs::temp_directory_path() / "weft-handlers-fuzz-XXXXXX").string();
    if (!::mkdtemp(dir.data())) {
        std::fprintf(stderr, "%s: mkdtemp: %s\n", kName, std::strerror(errno));
        std::abort();
    }
    world->dir = dir;
    std::atexit(remove_world);
    plant_tree(dir);

    config::ConfigError config_error;
    auto config = config::load_text(configuration(dir), "handlers_fuzzer.conf",
                                    config::Environment{}, config_error);
    if (!config) {
        std::fprintf(stderr, "%s: %s\n", kName, config_error.text().c_str());
        std::abort();
    }
    world->config = std::move(*config);

    world->listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = dir + "/backend.sock";
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
    if (world->listener < 0 ||
        ::bind(world->listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(world->listener, 64) != 0) {
        std::fprintf(stderr, "%s: the backend's socket: %s\n", kName, std::strerror(errno));
        std::abort();
    }
    world->log = std::getenv("WEFT_FUZZ_LOG") != nullptr;
    if (!world->log) {
        // The C stream only: fd 2 stays for the sanitizers and libFuzzer.
        stderr = std::fopen("/dev/null", "w");
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const Script script = parse({reinterpret_cast<const char*>(data), size});
    const std::size_t fds_before = open_fds();
    // On a thread of its own: the handlers' per-thread caches (what the disk
    // said, small files) go with it, so an input leaves nothing behind that
    // the next one could see, and frees what it allocated (libFuzzer looks
    // for leaks in any input that does not, at a cost of a full LSan pass).
    std::thread(serve, std::cref(script)).join();
    // Connections the upstream opened and the backend never took.
    for (int fd; (fd = ::accept4(world->listener, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;)
        ::close(fd);
    const std::size_t fds_after = open_fds();
    if (fds_after > fds_before) {
        std::fprintf(world->diagnostics, "%s: %zu fds open before the input, %zu after:\n", kName,
                     fds_before, fds_after);
        list_fds(world->diagnostics);
        std::abort();
    }
    return 0;
}
