#pragma once
// The configuration as the server reads it: plain values, resolved at load
// time (docs/architecture.md, "Configuration"). Nothing downstream parses strings.

#include "util/address.hpp"
#include "util/cidr.hpp"
#include "util/htpasswd.hpp"
#include "util/rate_limit.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace weft::config {

using std::chrono::milliseconds;

struct Upstream {
    std::string name;
    std::vector<Address> servers;
    // Idle connections kept open (FCGI_KEEP_CONN); at most max_conns are
    // open anyway, so by default every connection may be kept: idle ones
    // hold PHP-FPM children, but only for keepalive_timeout, and never while
    // a request of ours may wait for a child (fastcgi/upstream.hpp).
    unsigned keepalive = 8;
    // The cap on open connections: PHP-FPM's shipped pool has
    // pm.max_children = 5. Set it to your pool's: above it is safe (the
    // surplus waits in PHP-FPM's backlog, and keep-alive pauses meanwhile),
    // below it leaves children unused.
    unsigned max_conns = 5;
    milliseconds connect_timeout{2'000};
    milliseconds read_timeout{60'000};
    // How long a request waits for a connection when max_conns are busy
    // before it is answered 503.
    milliseconds queue_timeout{60'000};
    // How long a kept connection stays idle before it is closed, giving its
    // child back to the pool: under PHP-FPM's own idle limits (ondemand's
    // pm.process_idle_timeout = 10s), so weft closes first. 0: never.
    milliseconds keepalive_timeout{4'000};
};

// Which requests a handler answers (conf/weft.conf): a path
// prefix (`/static`), one exact path (`exact /`), or a pattern matched
// whole (`/w/*.php`, `*.css`; util/path_pattern.hpp).
struct Route {
    enum class Kind : std::uint8_t { prefix, exact, pattern };
    Kind kind = Kind::prefix;
    std::string path; // as written, without `exact` (a prefix's escapes resolved)
};

// One line of a `headers { }` section.
struct HeaderEdit {
    enum class Op : std::uint8_t {
        set,    // Name = value: replaces any field of that name
        add,    // add Name = value: appended
        remove, // remove Name: dropped
    };
    Op op = Op::set;
    std::string name;
    std::string value; // empty for remove
};

// `error_page = 404 410 /errors/gone.html` or `... file /srv/errors/x.html`.
struct ErrorPage {
    std::vector<int> statuses; // 400-599
    enum class Kind : std::uint8_t { route, file };
    Kind kind = Kind::route;
    std::string target; // a URL path in the site, or a file's path
};

// `auth_basic` (the realm, or off) and `auth_basic_user_file` (nginx's
// keys): a handler takes from its site each one it does not set. The file
// is read at load (its users, checked line by line); the server re-reads it
// when it changes (http/basic_auth.hpp).
struct BasicAuth {
    std::optional<std::string> realm; // set and not off
    bool off = false;                 // `auth_basic = off`
    std::string user_file;            // as opened: relative to the config file
    std::shared_ptr<const Htpasswd> users;
    // `satisfy = any`: an address allow_from names gets in without
    // credentials (nginx's satisfy); unset: the site's, else all.
    std::optional<bool> satisfy_any;
};

// `limit_conn`, `limit_rate` and `limit_status` (http/limits.hpp): each one
// a handler sets replaces its site's; the others it inherits.
struct LimitSettings {
    std::optional<unsigned> conn;  // requests in progress per client address; 0: off
    std::optional<RateLimit> rate; // off(): none
    std::optional<int> status;     // the answer over a limit: 429 or 503
};

// What every handler kind takes besides its own keys.
struct HandlerCommon {
    Route route;
    // Sent on responses below 400 that have no Cache-Control or Expires of
    // their own (an application's own wins). `expires` (at most 2^31 s)
    // adds Expires and a max-age.
    std::string cache_control;
    std::optional<milliseconds> expires;
    std::vector<HeaderEdit> headers;
    std::vector<ErrorPage> error_pages;
    // `allow_from` and `deny_from` lines in the order written (nginx's
    // allow/deny): the first that matches the client decides, none allows.
    // A handler with any replaces its site's (util/cidr.hpp).
    AccessRules access;
    BasicAuth auth;
    LimitSettings limits;
};

struct ResponseHandler : HandlerCommon {
    int status = 200;
    std::string content_type = "text/plain";
    std::string body;
};

struct RedirectHandler : HandlerCommon {
    std::string to;
    int status = 301;
};

struct FilesHandler : HandlerCommon {
    std::string root; // the site's when not set
    // The directory the route's prefix stands for (a file, for an exact
    // route), instead of root + the whole path.
    std::string alias;
    std::vector<std::string> index{"index.html"}; // tried in order; empty: none
    bool listing = false;
    bool precompressed = false;
    std::vector<std::string> deny; // path patterns (util/path_pattern.hpp): 403
    // Symlinks followed wherever they lead, as nginx does by default; off:
    // nothing outside the root is ever served.
    bool follow_symlinks = false;
};

struct FastcgiHandler : HandlerCommon {
    std::string upstream;      // a named upstream, or
    std::vector<Address> pass; // a server given here
    std::string root;          // the site's when not set
    std::string alias;         // as the files handler's
    std::vector<std::string> extensions{".php"};
    // Tried in order: the first that exists runs (a script) or is served.
    std::vector<std::string> index{"index.php"};
    bool static_files = true; // `static`
    std::string fallback;
    std::vector<std::string> deny; // path patterns: 403
    // Path patterns: only scripts whose name matches run (others are 404);
    // empty: every script with a listed extension.
    std::vector<std::string> scripts;
    bool follow_symlinks = false; // as the files handler's
    // Static files' .br/.gz twins, as the files handler's (scripts never).
    bool precompressed = false;
    std::vector<std::pair<std::string, std::string>> params;
    // A request body is read whole before a backend is taken (off: streamed
    // to it as it arrives, holding a PHP worker for as long as it takes).
    bool request_buffering = true;
    // What PHP sent and the client has not taken yet: this much in memory,
    // then up to max_temp_file_size in a temp file; past that, PHP waits.
    std::uint64_t buffers = 64u << 10;
    std::uint64_t max_temp_file_size = 1u << 30;
};

// What the server is doing (handlers/status): text, json, prometheus or html.
struct StatusHandler : HandlerCommon {
    // For a request that names no format (no `?format=`, an Accept of */*).
    std::string format = "text";
};

// A pub/sub hub (handlers/pubsub): GET PREFIX/TOPIC subscribes (WebSocket or
// SSE), POST PREFIX/TOPIC publishes the body. Its route is a prefix.
struct PubsubHandler : HandlerCommon {
    // Who may POST: `publish_from` allow rules (util/cidr.hpp, as allow_from
    // reads them: a client may when allows_explicitly()), and/or a bearer
    // token (Authorization: Bearer TOKEN). Each one set is required; neither
    // set: loopback only (127.0.0.0/8, ::1), and no forwarding fields.
    AccessRules publish_from;
    std::string publish_token;             // empty: none; ${VAR} keeps it out of the file
    bool clients_publish = false;          // a WebSocket subscriber's messages go to its topic
    unsigned history = 0;                  // messages kept per topic for late joiners (<= 10000)
    std::uint64_t max_message = 64u << 10; // bytes, 1 to 16M
    unsigned max_topics = 10'000;
    milliseconds ping{30'000}; // 0: off; WebSocket ping / SSE comment interval
    // Bytes queued for one subscriber; past it: WebSocket close 1008, SSE
    // ends. At least max_message.
    std::uint64_t max_queued = 256u << 10;
    std::vector<std::string> subprotocols; // Sec-WebSocket-Protocol names, preferred first
};

using Handler = std::variant<ResponseHandler, RedirectHandler, FilesHandler, FastcgiHandler,
                             StatusHandler, PubsubHandler>;

struct Site {
    std::vector<std::string> hosts; // empty: any host
    std::string root;
    // Every handler's, under the handler's own: a handler's entry for a
    // name (a header, a status) overrides the site's.
    std::vector<HeaderEdit> headers;
    std::vector<ErrorPage> error_pages;
    AccessRules access;   // for handlers without their own, and unrouted paths
    BasicAuth auth;       // the same
    LimitSettings limits; // for handlers without their own
    std::vector<Handler> handlers;
};

struct Config {
    unsigned threads = 0; // one loop per CPU
    milliseconds keep_alive_timeout{15'000};
    milliseconds request_timeout{10'000}; // to receive a whole request head
    milliseconds body_timeout{60'000};    // between two reads of a request body
    milliseconds send_timeout{60'000};    // between two writes of a response
    // After SIGTERM: serving on, each response closing its connection, for
    // drain_delay; then running requests have shutdown_timeout to finish.
    // 10 s: a stop ends in a known time, well within the unit's
    // TimeoutStopSec (conf/weft.service), which must exceed the two summed.
    milliseconds drain_delay{0};
    milliseconds shutdown_timeout{10'000};
    std::uint64_t max_request_body = 16u << 20;
    // Entries of the table behind every limit_conn and limit_rate (32 bytes
    // each): one per client address and limit, reused once idle.
    std::uint64_t limit_table = 64u << 10;
    std::string access_log = "off"; // off | stderr | a path
    std::string error_log = "stderr";
    // epoll | uring, as written (loop/io_backend.hpp chooses from it, and
    // WEFT_IO_BACKEND overrides it).
    std::string io_backend = "epoll";
    // Started as root, weft serves as this user once listeners and logs are
    // open; group: the user's primary group when empty.
    std::string user;
    std::string group;
    // After the listeners are open, the root directory becomes this one:
    // every path opened later (roots, logs, FastCGI sockets, the file a
    // reload re-reads) is resolved inside it. Needs root.
    std::string chroot;
    std::vector<Address> listeners; // 127.0.0.1:8080 when none is given
    // The listeners written `listener ADDRESS proxy_protocol`: each
    // connection starts with a PROXY protocol header (v1 or v2) that names
    // the client, or is closed without a response.
    std::vector<Address> proxy_protocol;
    // The proxies whose forwarding header names the client (real_ip_from,
    // nginx's set_real_ip_from: addresses, blocks, unix:; each an allow
    // rule), and which header that is (http/forwarded.hpp). None: the peer
    // is the client, and no header is read.
    AccessRules real_ip_from;
    enum class RealIpHeader : std::uint8_t { x_forwarded_for, forwarded, x_real_ip };
    RealIpHeader real_ip_header = RealIpHeader::x_forwarded_for;
    std::vector<Upstream> upstreams;
    std::vector<Site> sites;
};

} // namespace weft::config
