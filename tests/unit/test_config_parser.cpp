// Loading configurations: an example of every section, defaults, includes, and
// each schema error with its file, line and column.

#include "config/parser.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <map>

using namespace std::chrono_literals;
using namespace weft::config;

namespace {

const Environment kEnv = [](std::string_view name) -> std::optional<std::string> {
    if (name == "APP") return std::string("/usr/share/app");
    return std::nullopt;
};

Config load(std::string_view text) {
    ConfigError error;
    auto config = load_text(text, "test.conf", kEnv, error);
    INFO(error.text());
    REQUIRE(config);
    return *config;
}

std::string failure(std::string_view text) {
    ConfigError error;
    REQUIRE_FALSE(load_text(text, "test.conf", kEnv, error));
    return error.text();
}

// A scratch directory for include tests.
struct Files {
    std::string dir;
    Files() {
        char templ[] = "/tmp/weft-config-XXXXXX";
        dir = mkdtemp(templ);
    }
    std::string write(const std::string& name, const std::string& text) {
        const std::string path = dir + "/" + name;
        std::ofstream(path) << text;
        return path;
    }
    ~Files() { REQUIRE(system(("rm -rf " + dir).c_str()) == 0); }
};

} // namespace

TEST_CASE("an example of every section loads with every value in place", "[config]") {
    const Config c = load(R"(# comments start with '#'
threads = 2
keep_alive_timeout = 15s
request_timeout = 10s
send_timeout = 30s
drain_delay = 5s
shutdown_timeout = 30s
max_request_body = 16M
access_log = off
error_log = stderr
user = www-data
group = adm
io_backend = epoll

listener 127.0.0.1:8080
listener unix:/run/weft.sock

upstream php {
    server = unix:/run/php/php8.2-fpm.sock
    server = 127.0.0.1:9000
    keepalive = 8
    max_conns = 4
    connect_timeout = 2s
    read_timeout = 60s
    queue_timeout = 5s
    keepalive_timeout = 5s
}

site {
    root = /var/www/html
    response /hello {
        status = 200
        content_type = text/plain
        body = Hello, World!
    }
    redirect /old {
        to = /new
        status = 301
    }
    files /static {
        root = /srv/www
        index = index.html
        listing = off
        precompressed = on
        cache_control = public, max-age=3600
        deny = /private
    }
    fastcgi / {
        upstream = php
        root = ${APP}
        extensions = .php
        index = index.php
        static = on
        precompressed = on
        fallback = /index.php
        deny = /data /conf
        request_buffering = off
        buffers = 128K
        max_temp_file_size = 0
        params {
            APP_ENV = production
        }
    }
}
)");
    CHECK(c.threads == 2);
    CHECK((c.user == "www-data" && c.group == "adm"));
    CHECK(c.keep_alive_timeout == 15s);
    CHECK(c.send_timeout == 30s);
    CHECK((c.drain_delay == 5s && c.shutdown_timeout == 30s));
    CHECK(c.max_request_body == 16u << 20);
    REQUIRE(c.listeners.size() == 2);
    CHECK(c.listeners[1].to_string() == "unix:/run/weft.sock");
    REQUIRE(c.upstreams.size() == 1);
    CHECK(c.upstreams[0].name == "php");
    CHECK(c.upstreams[0].servers.size() == 2);
    CHECK(c.upstreams[0].max_conns == 4);
    CHECK(c.upstreams[0].read_timeout == 60s);
    CHECK(c.upstreams[0].queue_timeout == 5s);
    CHECK(c.upstreams[0].keepalive_timeout == 5s);
    REQUIRE(c.sites.size() == 1);
    const Site& site = c.sites[0];
    CHECK(site.root == "/var/www/html");
    REQUIRE(site.handlers.size() == 4);
    const auto& response = std::get<ResponseHandler>(site.handlers[0]);
    CHECK((response.route.path == "/hello" && response.body == "Hello, World!"));
    CHECK(std::get<RedirectHandler>(site.handlers[1]).to == "/new");
    const auto& files = std::get<FilesHandler>(site.handlers[2]);
    CHECK((files.root == "/srv/www" && files.precompressed && !files.listing));
    CHECK(files.cache_control == "public, max-age=3600");
    CHECK(files.deny == std::vector<std::string>{"/private"});
    const auto& php = std::get<FastcgiHandler>(site.handlers[3]);
    CHECK((php.upstream == "php" && php.root == "/usr/share/app"));
    CHECK(php.deny == std::vector<std::string>{"/data", "/conf"});
    CHECK(php.precompressed);
    CHECK((!php.request_buffering && php.buffers == 128u << 10 && php.max_temp_file_size == 0));
    CHECK(php.params ==
          std::vector<std::pair<std::string, std::string>>{{"APP_ENV", "production"}});
}

TEST_CASE("an empty configuration is the defaults, on 127.0.0.1:8080", "[config]") {
    const Config c = load("");
    CHECK(c.threads == 0);
    CHECK(c.keep_alive_timeout == 15s);
    CHECK(c.request_timeout == 10s);
    CHECK(c.body_timeout == 60s);
    CHECK(c.send_timeout == 60s);
    CHECK((c.drain_delay == 0s && c.shutdown_timeout == 10s));
    CHECK(c.max_request_body == 16u << 20);
    CHECK(c.access_log == "off");
    CHECK((c.user.empty() && c.group.empty()));
    REQUIRE(c.listeners.size() == 1);
    CHECK(c.listeners[0].to_string() == "127.0.0.1:8080");
    CHECK(c.sites.empty());
    const FastcgiHandler php;
    CHECK(
        (php.request_buffering && php.buffers == 64u << 10 && php.max_temp_file_size == 1u << 30));
}

TEST_CASE("io_backend is epoll by default, or uring, whatever this build has", "[config]") {
    CHECK(load("").io_backend == "epoll");
    CHECK(load("io_backend = epoll\n").io_backend == "epoll");
    // Accepted by a build without liburing too: weft then runs epoll and
    // says why (loop/io_backend.hpp).
    CHECK(load("io_backend = uring\n").io_backend == "uring");
    CHECK(failure("io_backend = Uring\n") ==
          "test.conf:1:14: expected epoll or uring, not 'Uring'");
    CHECK(failure("io_backend = epoll\nio_backend = uring\n") ==
          "test.conf:2:1: 'io_backend' is set twice in the top level (first on line 1)");
}

TEST_CASE("chroot takes an absolute path", "[config]") {
    CHECK(load("chroot = /srv/jail\n").chroot == "/srv/jail");
    CHECK(load("").chroot.empty());
    CHECK(failure("chroot = srv/jail\n").find("1:10: chroot takes an absolute path") !=
          std::string::npos);
}

TEST_CASE("schema errors name file, line, column and what was expected", "[config]") {
    CHECK(failure("keepalive_timeout = 5s\n") ==
          "test.conf:1:1: unknown key 'keepalive_timeout' in the top level (did you mean "
          "'keep_alive_timeout'?)");
    CHECK(failure("colour = red\n") == "test.conf:1:1: unknown key 'colour' in the top level");
    CHECK(failure("threads = 1\nthreads = 2\n") ==
          "test.conf:2:1: 'threads' is set twice in the top level (first on line 1)");
    CHECK(failure("threads 4\n") == "test.conf:1:9: expected '=' after 'threads'");
    CHECK(failure("threads = many\n") ==
          "test.conf:1:11: expected a number from 0 to 1024, not 'many'");
    CHECK(failure("request_timeout = soon\n") ==
          "test.conf:1:19: expected a duration such as 250ms, 15s, 2m, 1h or 7d, not 'soon'");
    CHECK(failure("max_request_body = 16X\n") ==
          "test.conf:1:20: expected a size such as 512, 16K, 1M or 1G, not '16X'");
    CHECK(failure("listener = *:80\n") == "test.conf:1:1: write 'listener ADDRESS', without '='");
    CHECK(failure("listener localhost:80\n") ==
          "test.conf:1:10: bad IPv4 address 'localhost' (numeric, or * for any)");
    CHECK(failure("io_backend = io_uring\n") ==
          "test.conf:1:14: expected epoll or uring, not 'io_uring'");
    CHECK(failure("io_backend = kqueue\n") ==
          "test.conf:1:14: expected epoll or uring, not 'kqueue'");
    CHECK(failure("server {\n}\n") ==
          "test.conf:1:1: unknown section 'server' in the top level (expected upstream or site)");
    CHECK(failure("site {\n  files static {\n  }\n}\n") ==
          "test.conf:2:9: expected a path prefix starting with '/', after 'files'");
    CHECK(failure("site {\n}\nsite {\n}\n") ==
          "test.conf:3:1: a second site without 'host': only the first one is ever used");
    CHECK(failure("site {\n  host = a.example b.example\n}\nsite {\n  host = B.example\n}\n") ==
          "test.conf:4:1: host 'B.example' is named by an earlier site too");
    // A request's Host is matched without its port: a host with one never is.
    CHECK(failure("site {\n  host = a.example example.com:8080\n}\n") ==
          "test.conf:2:10: a host is a name without a port: 'example.com:8080' (an IPv6 "
          "address goes in brackets)");
    CHECK(failure("site {\n  host = ::1\n}\n") ==
          "test.conf:2:10: a host is a name without a port: '::1' (an IPv6 address goes in "
          "brackets)");
    CHECK(failure("site {\n  host = [::1]:8080\n}\n") ==
          "test.conf:2:10: a host is a name without a port: '[::1]:8080'");
    CHECK(failure("site {\n  host = [::1\n}\n") == "test.conf:2:10: expected ']' closing '[::1'");
    CHECK(load("site {\n  host = [::1] a.example\n}\n").sites[0].hosts ==
          std::vector<std::string>{"[::1]", "a.example"});
    // A prefix is one word: two are likelier a typo than a path with a space.
    CHECK(failure("site {\n  files / /b {\n  }\n}\n") ==
          "test.conf:2:9: expected one path prefix after 'files', not '/ /b'");
    CHECK(failure("site {\n  files /s {\n    listing = maybe\n  }\n}\n") ==
          "test.conf:3:15: expected on or off (or true/false, yes/no), not 'maybe'");
    CHECK(failure("site {\n  proxy / {\n  }\n}\n") ==
          "test.conf:2:3: unknown section 'proxy' in a site (expected headers, response, redirect, "
          "files, fastcgi, status or pubsub)");
    CHECK(failure("upstream php {\n}\n") == "test.conf:1:1: upstream php needs a 'server'");
    CHECK(failure("site {\n  files / {\n    params {\n    }\n  }\n}\n") ==
          "test.conf:3:5: unknown section 'params' in a files handler (expected headers)");
    CHECK(failure("upstream a {\n server = 127.0.0.1:9000\n}\nupstream a {\n}\n") ==
          "test.conf:4:10: upstream 'a' is defined twice");
    CHECK(failure("site {\n  fastcgi / {\n  }\n}\n") ==
          "test.conf:2:3: fastcgi / needs 'upstream' or 'pass', one of them");
    CHECK(failure("site {\n  fastcgi / {\n    upstream = nope\n  }\n}\n") ==
          "test.conf:3:16: no upstream named 'nope'");
    CHECK(failure("site {\n  redirect /old {\n  }\n}\n") ==
          "test.conf:2:3: redirect /old needs 'to'");
    CHECK(failure("site {\n  redirect /a {\n    to = /b\n    status = 200\n  }\n}\n") ==
          "test.conf:4:14: expected a redirect status (301, 302, 303, 307 or 308), not '200'");
    CHECK(failure("site {\n") == "test.conf:1:1: section 'site' is not closed: a '}' is missing");
    CHECK(failure("root = ${NOPE}\n") ==
          "test.conf:1:8: environment variable NOPE is not set (write ${NOPE:-default} to give "
          "a default)");
}

TEST_CASE("an upstream closes idle connections after 4 s by default, never with 0", "[config]") {
    const auto upstream = [](std::string_view lines) {
        return load("upstream php {\n  server = unix:/run/php.sock\n" + std::string(lines) + "}\n")
            .upstreams.at(0);
    };
    const Upstream defaults = upstream("");
    CHECK(defaults.keepalive == 8);
    CHECK(defaults.max_conns == 5);
    CHECK(defaults.keepalive_timeout == 4s);
    CHECK(upstream("  keepalive_timeout = 250ms\n").keepalive_timeout == 250ms);
    CHECK(upstream("  keepalive_timeout = 2m\n").keepalive_timeout == 2min);
    CHECK(upstream("  keepalive_timeout = 0\n").keepalive_timeout == 0s);
    CHECK(failure("upstream php {\n  server = unix:/a\n  keepalive_timeout = later\n}\n") ==
          "test.conf:3:23: expected a duration such as 250ms, 15s, 2m, 1h or 7d, not 'later'");
    CHECK(failure("upstream php {\n  server = unix:/a\n  keep_alive_timeout = 1s\n}\n") ==
          "test.conf:3:3: unknown key 'keep_alive_timeout' in an upstream (did you mean "
          "'keepalive_timeout'?)");
}

TEST_CASE("a response status is a final one, 200 to 599", "[config]") {
    const auto with_status = [](std::string_view status) {
        return "site {\n  response /a {\n    status = " + std::string(status) + "\n  }\n}\n";
    };
    // A 1xx is interim: a response of its own would leave the client
    // waiting for the final one.
    for (std::string_view status : {"100", "101", "103", "199"})
        CHECK(failure(with_status(status)) ==
              "test.conf:3:14: expected a final status from 200 to 599 (1xx are interim), not '" +
                  std::string(status) + "'");
    for (std::string_view status : {"0", "99", "600", "2OO", ""})
        CHECK(failure(with_status(status)) ==
              "test.conf:3:14: expected a final status from 200 to 599 (1xx are interim), not '" +
                  std::string(status) + "'");
    for (int status : {200, 204, 418, 599}) {
        const Config config = load(with_status(std::to_string(status)));
        CHECK(std::get<ResponseHandler>(config.sites[0].handlers[0]).status == status);
    }
}

TEST_CASE("includes are relative to the including file, cycles and missing files are errors",
          "[config]") {
    Files files;
    REQUIRE(system(("mkdir -p " + files.dir + "/sites").c_str()) == 0);
    files.write("sites/app.conf", "site {\n    include handlers.conf\n}\n");
    files.write("sites/handlers.conf", "response /ping {\n    body = pong\n}\n");
    const std::string main = files.write("weft.conf", "threads = 1\ninclude sites/app.conf\n");
    ConfigError error;
    auto config = load_file(main, kEnv, error);
    INFO(error.text());
    REQUIRE(config);
    REQUIRE(config->sites.size() == 1);
    CHECK(std::get<ResponseHandler>(config->sites[0].handlers[0]).body == "pong");

    files.write("a.conf", "include b.conf\n");
    files.write("b.conf", "\ninclude a.conf\n");
    REQUIRE_FALSE(load_file(files.dir + "/a.conf", kEnv, error));
    CHECK(error.text() ==
          files.dir + "/b.conf:2:9: include cycle: " + files.dir + "/a.conf is already being read");

    files.write("c.conf", "include missing.conf\n");
    REQUIRE_FALSE(load_file(files.dir + "/c.conf", kEnv, error));
    CHECK(error.text() == files.dir + "/c.conf:1:9: cannot read " + files.dir +
                              "/missing.conf: No such file or directory");

    files.write("f.conf", "include /dev/zero\n");
    REQUIRE_FALSE(load_file(files.dir + "/f.conf", kEnv, error));
    CHECK(error.text() == files.dir + "/f.conf:1:9: cannot read /dev/zero: Invalid argument");

    files.write("d.conf", "site {\n  files /x {\n    listing = sometimes\n  }\n}\n");
    files.write("e.conf", "include d.conf\n");
    REQUIRE_FALSE(load_file(files.dir + "/e.conf", kEnv, error));
    CHECK(error.text() == files.dir + "/d.conf:3:15: expected on or off (or true/false, yes/no), "
                                      "not 'sometimes'");
}

TEST_CASE("a listener may require the PROXY protocol", "[config]") {
    const Config c = load("listener 127.0.0.1:8080\nlistener [::1]:8081   proxy_protocol\n");
    REQUIRE(c.listeners.size() == 2);
    CHECK(c.listeners[1].to_string() == "[::1]:8081");
    REQUIRE(c.proxy_protocol.size() == 1);
    CHECK(c.proxy_protocol[0] == c.listeners[1]);
    CHECK(failure("listener *:80 proxy\n") ==
          "test.conf:1:10: expected 'proxy_protocol' after the listener's address, not 'proxy'");
}

TEST_CASE("real_ip_from lists trusted proxies, real_ip_header their header", "[config]") {
    const Config none = load("");
    CHECK(none.real_ip_from.empty());
    CHECK(none.real_ip_header == Config::RealIpHeader::x_forwarded_for);
    const Config c = load("real_ip_from = 10.0.0.0/8 ::1\nreal_ip_from = unix:\n"
                          "real_ip_header = forwarded\n");
    REQUIRE(c.real_ip_from.rules().size() == 3);
    CHECK(c.real_ip_from.rules()[0].to_string() == "allow 10.0.0.0/8");
    CHECK(c.real_ip_from.rules()[2].to_string() == "allow unix:");
    CHECK(c.real_ip_header == Config::RealIpHeader::forwarded);
    CHECK(load("real_ip_header = X-Real-IP\n").real_ip_header == Config::RealIpHeader::x_real_ip);
    CHECK(failure("real_ip_from = 10.0.0.0/8 10.1.2.3/8\n").starts_with("test.conf:1:16: "));
    CHECK(failure("real_ip_header = X-Client-IP\n") ==
          "test.conf:1:18: expected X-Forwarded-For, Forwarded or X-Real-IP, not 'X-Client-IP'");
}

TEST_CASE("a status handler takes a default format and every handler's keys", "[config]") {
    const Config c = load("site {\n  status /server-status {\n    allow_from = 127.0.0.1\n"
                          "    deny_from = all\n  }\n  status exact /metrics {\n"
                          "    format = prometheus\n  }\n}\n");
    const auto& status = std::get<StatusHandler>(c.sites[0].handlers[0]);
    CHECK(status.route.path == "/server-status");
    CHECK(status.format == "text");
    CHECK(status.access.rules().size() == 2);
    CHECK(std::get<StatusHandler>(c.sites[0].handlers[1]).format == "prometheus");
    CHECK(failure("site {\n  status /s {\n    format = xml\n  }\n}\n") ==
          "test.conf:3:14: expected text, json, prometheus or html, not 'xml'");
    CHECK(failure("site {\n  status /s {\n    formats = json\n  }\n}\n")
              .find("unknown key 'formats' in a status handler") != std::string::npos);
}

TEST_CASE("a pubsub handler takes its hub's keys, checked", "[config]") {
    const Config c = load("site {\n  pubsub /live {\n  }\n  pubsub /chat {\n"
                          "    publish_from = 10.0.0.0/8\n    publish_from = ::1 unix:\n"
                          "    publish_token = abc-DEF_1.2~+/==\n    clients_publish = on\n"
                          "    history = 50\n    max_message = 16K\n    max_topics = 100\n"
                          "    ping = 0\n    max_queued = 1M\n    subprotocols = chat v2.chat\n"
                          "  }\n}\n");
    const auto& defaults = std::get<PubsubHandler>(c.sites[0].handlers[0]);
    CHECK(defaults.route.path == "/live");
    CHECK(defaults.publish_from.empty());
    CHECK(defaults.publish_token.empty());
    CHECK_FALSE(defaults.clients_publish);
    CHECK(defaults.history == 0);
    CHECK(defaults.max_message == 64u << 10);
    CHECK(defaults.max_topics == 10'000);
    CHECK(defaults.ping == 30s);
    CHECK(defaults.max_queued == 256u << 10);
    CHECK(defaults.subprotocols.empty());
    const auto& chat = std::get<PubsubHandler>(c.sites[0].handlers[1]);
    REQUIRE(chat.publish_from.rules().size() == 3);
    CHECK(chat.publish_from.rules()[0].to_string() == "allow 10.0.0.0/8");
    CHECK(chat.publish_from.rules()[2].to_string() == "allow unix:");
    CHECK(chat.publish_token == "abc-DEF_1.2~+/==");
    CHECK(chat.clients_publish);
    CHECK(chat.history == 50);
    CHECK(chat.max_message == 16u << 10);
    CHECK(chat.max_topics == 100);
    CHECK(chat.ping == 0ms);
    CHECK(chat.max_queued == 1u << 20);
    CHECK(chat.subprotocols == std::vector<std::string>{"chat", "v2.chat"});
    CHECK(
        std::get<PubsubHandler>(load("site {\n  pubsub /p {\n    publish_token = ${APP}\n  }\n}\n")
                                    .sites[0]
                                    .handlers[0])
            .publish_token == "/usr/share/app");

    const auto in_pubsub = [](std::string_view line) {
        return failure("site {\n  pubsub /live {\n    " + std::string(line) + "\n  }\n}\n");
    };
    CHECK(in_pubsub("history = 10001") ==
          "test.conf:3:15: expected a number from 0 to 10000, not '10001'");
    CHECK(in_pubsub("max_message = 0") == "test.conf:3:19: expected from 1 to 16M bytes, not '0'");
    CHECK(in_pubsub("max_message = 17M") ==
          "test.conf:3:19: expected from 1 to 16M bytes, not '17M'");
    CHECK(in_pubsub("max_topics = 0").starts_with("test.conf:3:18: expected a number from 1 "));
    CHECK(in_pubsub("ping = 10ms") ==
          "test.conf:3:12: expected 0 (off) or from 1s to 24h, not '10ms'");
    CHECK(in_pubsub("max_queued = 0") == "test.conf:3:18: expected from 1 to 1G bytes, not '0'");
    CHECK(in_pubsub("publish_token = two words") ==
          "test.conf:3:21: expected a bearer token (letters, digits and -._~+/, then any '='), "
          "not 'two words'");
    CHECK(in_pubsub("publish_token = =abc").starts_with("test.conf:3:21: expected a bearer"));
    CHECK(in_pubsub("publish_from = 10.1.2.3/8").starts_with("test.conf:3:20: "));
    CHECK(in_pubsub("subprotocols = chat v2/chat") ==
          "test.conf:3:20: expected token names, not 'v2/chat'");
    CHECK(in_pubsub("clients_publish = maybe").starts_with("test.conf:3:23: "));
    CHECK(in_pubsub("max_message = 1M") ==
          "test.conf:2:3: pubsub /live has 'max_queued' under 'max_message'");
    CHECK(failure("site {\n  pubsub exact /live {\n  }\n}\n") ==
          "test.conf:2:3: pubsub exact /live needs a prefix route: its topics are the paths "
          "under it");
    CHECK(in_pubsub("histroy = 5")
              .find("unknown key 'histroy' in a pubsub handler (did you "
                    "mean 'history'?)") != std::string::npos);
}
