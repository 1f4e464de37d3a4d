// The request-head parser: every field of Request for each accepted form, the
// status of each refusal, and that feeding a head byte by byte gives exactly
// what feeding it whole gives.

#include "http/parser.hpp"
#include "http/path.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>

using namespace weft::http;

namespace {

struct Outcome {
    ParseStatus status;
    int error;
    std::size_t head_size;
};

// Everything a handler could read from a Request, as text to compare.
std::string describe(const Request& r) {
    std::string text =
        "[" + std::string(r.head) + "] " + std::to_string(static_cast<int>(r.method)) + " [" +
        std::string(r.method_name) + "] [" + std::string(r.target) + "] [" + std::string(r.path) +
        "] [" + std::string(r.query) + "] [" + (r.host.data() ? std::string(r.host) : "null") +
        "] " + std::to_string(r.minor) + (r.keep_alive ? " keep-alive" : " close") +
        (r.expect_continue ? " expect" : "") + (r.chunked ? " chunked" : "") +
        (r.path_normal ? " normal" : "") + " length " + std::to_string(r.content_length);
    for (std::size_t i = 0; i < r.header_count; ++i)
        text +=
            " {" + std::string(r.headers[i].name) + ": " + std::string(r.headers[i].value) + "}";
    return text;
}

// Parses `text` whole, then again fed one byte more per call (every prefix,
// the same buffer growing, as a connection does); the two must agree on
// everything. The whole run's result is returned.
Outcome run(std::string_view text, Request& request, ParserLimits limits = {}) {
    RequestParser whole(limits);
    const Outcome outcome{whole.parse(text, request), whole.error_status(), whole.head_size()};
    if (outcome.status == ParseStatus::error) CHECK_FALSE(whole.error_reason().empty());

    auto grown_request = std::make_unique<Request>();
    RequestParser grown(limits);
    ParseStatus status = ParseStatus::incomplete;
    for (std::size_t n = 0; n <= text.size() && status == ParseStatus::incomplete; ++n)
        status = grown.parse(text.substr(0, n), *grown_request);
    CHECK(status == outcome.status);
    CHECK(grown.error_status() == outcome.error);
    CHECK(grown.head_size() == outcome.head_size);
    CHECK(grown.error_reason() == whole.error_reason());
    if (status == ParseStatus::done) CHECK(describe(*grown_request) == describe(request));
    return outcome;
}

// A head that must parse; its Request (views into `text`) is in `request`.
void accept(std::string_view text, Request& request, ParserLimits limits = {}) {
    const Outcome outcome = run(text, request, limits);
    REQUIRE(outcome.status == ParseStatus::done);
    CHECK(outcome.head_size == text.size());
}

// A head that must be refused: its status.
int refusal(std::string_view text, ParserLimits limits = {}) {
    auto request = std::make_unique<Request>();
    const Outcome outcome = run(text, *request, limits);
    REQUIRE(outcome.status == ParseStatus::error);
    return outcome.error;
}

std::string with_host(std::string_view request_line) {
    return std::string(request_line) + "\r\nHost: h\r\n\r\n";
}

std::string with_field(std::string_view field) {
    return "GET / HTTP/1.1\r\nHost: h\r\n" + std::string(field) + "\r\n\r\n";
}

bool inside(std::string_view view, std::string_view buffer) {
    return view.data() >= buffer.data() &&
           view.data() + view.size() <= buffer.data() + buffer.size();
}

} // namespace

TEST_CASE("a browser's GET: every field of the Request", "[http]") {
    const std::string head =
        "GET /docs/index.html?lang=en&q=a%20b HTTP/1.1\r\n"
        "Host: www.example.com\r\n"
        "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Firefox/115.0\r\n"
        "Accept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.8\r\n"
        "Accept-Language: en-US,en;q=0.5\r\n"
        "Accept-Encoding: gzip, deflate, br\r\n"
        "Connection: keep-alive\r\n"
        "Upgrade-Insecure-Requests: 1\r\n"
        "\r\n";
    auto r = std::make_unique<Request>();
    accept(head, *r);
    CHECK(r->method == Method::get);
    CHECK(r->head == head);
    CHECK(r->head.data() == head.data());
    CHECK(r->method_name == "GET");
    CHECK(r->target == "/docs/index.html?lang=en&q=a%20b");
    CHECK(r->path == "/docs/index.html");
    CHECK(r->query == "lang=en&q=a%20b");
    CHECK(r->host == "www.example.com");
    CHECK(r->minor == 1);
    CHECK(r->keep_alive);
    CHECK_FALSE(r->expect_continue);
    CHECK_FALSE(r->chunked);
    CHECK(r->content_length == 0);
    CHECK_FALSE(r->has_body());
    REQUIRE(r->header_count == 7);
    CHECK(r->headers[0].name == "Host");
    CHECK(r->headers[1].value == "Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Firefox/115.0");
    CHECK(r->headers[6].name == "Upgrade-Insecure-Requests");
    CHECK(r->headers[6].value == "1");
    CHECK(r->header("accept-ENCODING") == "gzip, deflate, br");
    CHECK(r->header("X-Missing").empty());
    CHECK(r->header("X-Missing").data() == nullptr);
    for (std::size_t i = 0; i < r->header_count; ++i) {
        CHECK(inside(r->headers[i].name, head));
        CHECK(inside(r->headers[i].value, head));
    }
    CHECK(inside(r->path, head));
    CHECK(inside(r->host, head));
}

TEST_CASE("the head as sent: from the request line through the empty line, no more", "[http]") {
    // Empty lines before it are no part of it, nor a request pipelined after.
    const std::string request = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
    const std::string buffer = "\r\n\r\n" + request + "GET /b HTTP/1.1\r\n";
    auto r = std::make_unique<Request>();
    RequestParser parser;
    REQUIRE(parser.parse(buffer, *r) == ParseStatus::done);
    CHECK(r->head == request);
    CHECK(r->head.data() == buffer.data() + 4);
    CHECK(parser.head_size() == 4 + request.size());
}

// What path_normal must say of an origin-form path: no '%', no slash
// followed by a slash or a dot.
bool plainly_normal(std::string_view path) {
    if (path.find('%') != std::string_view::npos) return false;
    for (std::size_t i = 0; i + 1 < path.size(); ++i)
        if (path[i] == '/' && (path[i + 1] == '/' || path[i + 1] == '.')) return false;
    return true;
}

TEST_CASE("the parser tells a path normal exactly when it has no '%', '//' or '/.'", "[http]") {
    // Each odd pair (or '%') at every offset of paths of 1 to 40 bytes, the
    // target starting at different offsets in the line (method lengths),
    // with and without a query that holds the odd bytes too: the scan's
    // blocks, its tail and the byte before each block all get their turn.
    auto r = std::make_unique<Request>();
    int normal = 0, odd = 0;
    for (const std::string method : {"GET", "DELETE", "OPTIONS"})
        for (std::size_t length = 1; length <= 40; ++length)
            for (const std::string oddity : {"", "//", "/.", "%", "/a", "./"})
                for (std::size_t at = 1; at + oddity.size() <= length; at += 3)
                    for (const std::string query : {"", "?x//y/.%"}) {
                        std::string path = "/" + std::string(length - 1, 'b');
                        path.replace(at, oddity.size(), oddity);
                        const std::string head =
                            with_host(method + " " + path + query + " HTTP/1.1");
                        accept(head, *r);
                        REQUIRE(r->path == path);
                        CHECK(r->path_normal == plainly_normal(path));
                        (r->path_normal ? normal : odd) += 1;
                        if (r->path_normal) {
                            std::string out(path.size(), '\0');
                            const auto normalized = normalize_path(r->path, out.data());
                            REQUIRE(normalized);
                            CHECK(*normalized == path); // what admission takes as it is
                        }
                    }
    CHECK(normal > 1000);
    CHECK(odd > 1000);
    // Other forms say nothing.
    const std::string asterisk = with_host("OPTIONS * HTTP/1.1");
    accept(asterisk, *r);
    CHECK_FALSE(r->path_normal);
    const std::string absolute = with_host("GET http://h/a HTTP/1.1");
    accept(absolute, *r);
    CHECK(r->path == "/a");
    CHECK_FALSE(r->path_normal);
}

TEST_CASE("a path without a query has an empty query, and so has a bare '?'", "[http]") {
    auto r = std::make_unique<Request>();
    const std::string plain = with_host("GET /a/b HTTP/1.1");
    accept(plain, *r);
    CHECK(r->path == "/a/b");
    CHECK(r->query.empty());
    const std::string bare = with_host("GET /a? HTTP/1.1");
    accept(bare, *r);
    CHECK(r->path == "/a");
    CHECK(r->query.empty());
    const std::string two = with_host("GET /a?b?c HTTP/1.1");
    accept(two, *r);
    CHECK(r->query == "b?c");
}

TEST_CASE("methods: the known names, case-sensitive, and any other token is `other`", "[http]") {
    const std::pair<const char*, Method> known[] = {
        {"GET", Method::get},        {"HEAD", Method::head},
        {"POST", Method::post},      {"PUT", Method::put},
        {"DELETE", Method::delete_}, {"OPTIONS", Method::options},
        {"PATCH", Method::patch},    {"TRACE", Method::trace},
        {"get", Method::other},      {"Get", Method::other},
        {"PROPFIND", Method::other}, {"M-SEARCH", Method::other},
        {"GETX", Method::other},     {"X!#$%&'*+.^_`|~", Method::other},
    };
    auto r = std::make_unique<Request>();
    for (const auto& [name, method] : known) {
        const std::string head = with_host(std::string(name) + " / HTTP/1.1");
        INFO(name);
        accept(head, *r);
        CHECK(r->method == method);
        CHECK(r->method_name == name);
    }
    CHECK(refusal(with_host("G(T / HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GE\"T / HTTP/1.1")) == 400);
    CHECK(refusal(with_host("G\xc3\xa9T / HTTP/1.1")) == 400);
}

TEST_CASE("absolute-form: the authority is the host, whatever Host says", "[http]") {
    auto r = std::make_unique<Request>();
    const std::string head =
        "GET http://Example.org:8080/a/b?x=1 HTTP/1.1\r\nHost: other.example\r\n\r\n";
    accept(head, *r);
    CHECK(r->target == "http://Example.org:8080/a/b?x=1");
    CHECK(r->host == "Example.org:8080");
    CHECK(r->path == "/a/b");
    CHECK(r->query == "x=1");
    CHECK(r->header("host") == "other.example");

    const std::string https = "GET HTTPS://[::1]:8443 HTTP/1.1\r\nHost: x\r\n\r\n";
    accept(https, *r);
    CHECK(r->host == "[::1]:8443");
    CHECK(r->path == "/"); // an empty path is "/", still a view into the buffer
    CHECK(inside(r->path, https));
    CHECK(r->query.empty());

    const std::string query = "GET hTTp://h?q=1 HTTP/1.1\r\nHost: h\r\n\r\n";
    accept(query, *r);
    CHECK(r->host == "h");
    CHECK(r->path == "/");
    CHECK(r->query == "q=1");

    CHECK(refusal(with_host("GET http:///x HTTP/1.1")) == 400);      // no host
    CHECK(refusal(with_host("GET http://u:p@h/x HTTP/1.1")) == 400); // userinfo
    CHECK(refusal(with_host("GET ftp://h/x HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET http:/h/x HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET example.com/x HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET http://h\"/ HTTP/1.1")) == 400);
}

TEST_CASE("asterisk-form only with OPTIONS", "[http]") {
    auto r = std::make_unique<Request>();
    const std::string head = with_host("OPTIONS * HTTP/1.1");
    accept(head, *r);
    CHECK(r->method == Method::options);
    CHECK(r->target == "*");
    CHECK(r->path == "*");
    CHECK(r->query.empty());
    CHECK(refusal(with_host("GET * HTTP/1.1")) == 400);
    CHECK(refusal(with_host("OPTIONS *x HTTP/1.1")) == 400);
    CHECK(refusal(with_host("OPTIONS *? HTTP/1.1")) == 400);
}

TEST_CASE("authority-form only with CONNECT, and CONNECT only with it", "[http]") {
    auto r = std::make_unique<Request>();
    const std::string head = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n";
    accept(head, *r);
    CHECK(r->method == Method::connect);
    CHECK(r->target == "example.com:443");
    CHECK(r->host == "example.com:443");
    CHECK(r->path.empty());
    CHECK(refusal(with_host("CONNECT / HTTP/1.1")) == 400);
    CHECK(refusal(with_host("CONNECT example.com HTTP/1.1")) == 400);
    CHECK(refusal(with_host("CONNECT example.com: HTTP/1.1")) == 400);
    CHECK(refusal(with_host("CONNECT example.com:x HTTP/1.1")) == 400);
    CHECK(refusal(with_host("CONNECT u@example.com:443 HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET example.com:443 HTTP/1.1")) == 400);
}

TEST_CASE("the request line: one SP between three parts, nothing else", "[http]") {
    CHECK(refusal(with_host("GET  / HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET /  HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET / HTTP/1.1 ")) == 400);
    CHECK(refusal(with_host(" GET / HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET\t/ HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET /\tHTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET /a b HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET / ")) == 400);
    CHECK(refusal(with_host("GET /")) == 400);
    CHECK(refusal(with_host("GET")) == 400);
    CHECK(refusal(with_host("/ HTTP/1.1")) == 400);
}

TEST_CASE("target bytes: no controls, DEL or bytes above 0x7F", "[http]") {
    CHECK(refusal(with_host("GET /a\x01 HTTP/1.1")) == 400);
    CHECK(refusal(with_host(std::string("GET /a") + '\0' + " HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET /a\x7f HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET /caf\xc3\xa9 HTTP/1.1")) == 400);
    CHECK(refusal(with_host("GET /\xff HTTP/1.1")) == 400);
    auto r = std::make_unique<Request>();
    const std::string head = with_host("GET /!$&'()*+,;=:@-._~%41[]{}|^`\\\"<># HTTP/1.1");
    accept(head, *r);
    CHECK(r->path == "/!$&'()*+,;=:@-._~%41[]{}|^`\\\"<>#");
}

TEST_CASE("versions: 1.1 and 1.0 parse, other well-formed ones are 505, the rest 400", "[http]") {
    auto r = std::make_unique<Request>();
    const std::string one_zero = "GET / HTTP/1.0\r\n\r\n";
    accept(one_zero, *r);
    CHECK(r->minor == 0);
    CHECK_FALSE(r->keep_alive);
    CHECK(r->host.data() == nullptr); // HTTP/1.0 needs no Host

    for (const char* version : {"HTTP/2.0", "HTTP/1.2", "HTTP/3.0", "HTTP/0.9", "HTTP/9.9"}) {
        INFO(version);
        CHECK(refusal(with_host(std::string("GET / ") + version)) == 505);
    }
    for (const char* version : {"http/1.1", "HTTP/1.10", "HTTP/11", "HTTP/1", "HTTP/1.", "HTTP/a.1",
                                "HTTP 1.1", "HTTP/1.1x", "HTTPS/1.1", "HTTP/1,1", "HTTP/-1.1"}) {
        INFO(version);
        CHECK(refusal(with_host(std::string("GET / ") + version)) == 400);
    }
}

TEST_CASE("Connection: close and keep-alive by version, as a case-insensitive list", "[http]") {
    auto r = std::make_unique<Request>();
    struct Case {
        const char* head;
        bool keep_alive;
    };
    const Case cases[] = {
        {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", true},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", false},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, CLOSE\r\n\r\n", false},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n", true},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: closed\r\n\r\n", true},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: Keep-Alive\r\nconnection: close\r\n\r\n", false},
        {"GET / HTTP/1.0\r\n\r\n", false},
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
        {"GET / HTTP/1.0\r\nConnection: ,, KEEP-ALIVE ,\r\n\r\n", true},
        {"GET / HTTP/1.0\r\nConnection: close, keep-alive\r\n\r\n", false},
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false},
        {"GET / HTTP/1.0\r\nConnection: keep-alive-x\r\n\r\n", false},
    };
    for (const Case& c : cases) {
        INFO(c.head);
        accept(c.head, *r);
        CHECK(r->keep_alive == c.keep_alive);
    }
}

TEST_CASE("Expect: 100-continue in HTTP/1.1 only, other expectations are ignored", "[http]") {
    auto r = std::make_unique<Request>();
    const std::string yes = with_field("Expect: 100-Continue");
    accept(yes, *r);
    CHECK(r->expect_continue);
    const std::string other = with_field("Expect: something-else");
    accept(other, *r);
    CHECK_FALSE(r->expect_continue);
    const std::string old = "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n";
    accept(old, *r);
    CHECK_FALSE(r->expect_continue);
}

TEST_CASE("field values: whitespace trimmed, obs-text kept, empty allowed", "[http]") {
    auto r = std::make_unique<Request>();
    const std::string head = "GET / HTTP/1.1\r\n"
                             "Host:h\r\n"
                             "X-Spaces: \t a \t b \t\r\n"
                             "X-Empty:\r\n"
                             "X-Blank:   \r\n"
                             "X-Latin: caf\xc3\xa9 \xff\x80\r\n"
                             "X-Odd: \"quoted\" (comment) <>{}[]\\\r\n"
                             "\r\n";
    accept(head, *r);
    CHECK(r->host == "h");
    CHECK(r->header("x-spaces") == "a \t b");
    CHECK(r->header("x-empty").empty());
    CHECK(r->header("x-empty").data() != nullptr);
    CHECK(r->header("x-blank").empty());
    CHECK(r->header("x-latin") == "caf\xc3\xa9 \xff\x80");
    CHECK(r->header("x-odd") == "\"quoted\" (comment) <>{}[]\\");
}

TEST_CASE("field syntax errors are 400", "[http]") {
    CHECK(refusal(with_field("X : y")) == 400); // whitespace before the colon
    CHECK(refusal(with_field("X\t: y")) == 400);
    CHECK(refusal(with_field("X y: z")) == 400);
    CHECK(refusal(with_field("X-y")) == 400);     // no colon
    CHECK(refusal(with_field(": y")) == 400);     // no name
    CHECK(refusal(with_field("X(y): z")) == 400); // not a token
    CHECK(refusal(with_field("X\xc3\xa9: z")) == 400);
    CHECK(refusal(with_field("X: a\r\n  b")) == 400); // obs-fold
    CHECK(refusal(with_field("X: a\r\n\tb")) == 400);
    CHECK(refusal("GET / HTTP/1.1\r\n Host: h\r\n\r\n") == 400);
    CHECK(refusal(with_field(std::string("X: a") + '\0' + "b")) == 400);
    CHECK(refusal(with_field("X: a\x01")) == 400);
    CHECK(refusal(with_field("X: a\x1f")) == 400);
    CHECK(refusal(with_field("X: a\x7f")) == 400);
    CHECK(refusal(with_field("X: a\x0b")) == 400);
}

TEST_CASE("a bare LF anywhere in the head is 400", "[http]") {
    CHECK(refusal("GET / HTTP/1.1\nHost: h\r\n\r\n") == 400);
    CHECK(refusal("GET / HTTP/1.1\r\nHost: h\n\r\n") == 400);
    CHECK(refusal("GET / HTTP/1.1\r\nHost: h\r\n\n") == 400);
    CHECK(refusal("GET / HTTP/1.1\r\nHost: h\r\nX: a\nb\r\n\r\n") == 400);
    CHECK(refusal("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
    CHECK(refusal("GET / HTTP/1.1\n\n") == 400);
}

TEST_CASE("a header line cut at a bare CR is 400, not a line end", "[http]") {
    // A peer that ends lines at a bare CR sees a Content-Length here, and a
    // body; one that ignores the line sees none. Either way the framing is
    // ambiguous, so the request is refused.
    CHECK(refusal("GET / HTTP/1.1\r\nHost: a\r\nX: y\rContent-Length: 5\r\n\r\n") == 400);
    CHECK(refusal("GET / HTTP/1.1\rHost: a\r\n\r\n") == 400);
    CHECK(refusal("GET / HTTP/1.1\r\nHost: a\r\r\n\r\n") == 400);
    CHECK(refusal("GET / HTTP/1.1\r\nHost: a\r\n\r\r\n") == 400);
    CHECK(refusal("GET / HTTP/1.1\r\nHost: a\r\n\r\rX") == 400);
    CHECK(refusal("\r\rGET / HTTP/1.1\r\nHost: a\r\n\r\n") == 400);
    // The refusal comes with the byte after the CR, before the head ends.
    RequestParser parser;
    auto r = std::make_unique<Request>();
    const std::string partial = "GET / HTTP/1.1\r\nHost: a\r\nX: y\r";
    CHECK(parser.parse(partial, *r) == ParseStatus::incomplete);
    const std::string more = partial + "C";
    CHECK(parser.parse(more, *r) == ParseStatus::error);
    CHECK(parser.error_status() == 400);
}

TEST_CASE("Content-Length: 1*DIGIT once, up to 2^64-1", "[http]") {
    auto r = std::make_unique<Request>();
    const std::pair<const char*, std::uint64_t> valid[] = {
        {"0", 0},
        {"5", 5},
        {"007", 7},
        {" 42 ", 42},
        {"18446744073709551615", 18446744073709551615u},
    };
    for (const auto& [text, value] : valid) {
        const std::string head = with_field(std::string("Content-Length: ") + text);
        INFO(text);
        accept(head, *r);
        CHECK(r->content_length == value);
        CHECK_FALSE(r->chunked);
        CHECK(r->has_body() == (value != 0));
    }
    for (const char* text : {"", "+5", "-1", "5 5", "5,5", "5, 5", "0x10", "1e3", "5.0", "five",
                             "18446744073709551616", "99999999999999999999999"}) {
        INFO(text);
        CHECK(refusal(with_field(std::string("Content-Length: ") + text)) == 400);
    }
    CHECK(refusal(with_field("Content-Length: 5\r\nContent-Length: 5")) == 400);
    CHECK(refusal(with_field("Content-Length: 5\r\ncontent-length: 6")) == 400);
}

TEST_CASE("Transfer-Encoding: exactly chunked, other codings are 501, with CL 400", "[http]") {
    auto r = std::make_unique<Request>();
    for (const char* value : {"chunked", "Chunked", "CHUNKED", "  chunked\t"}) {
        const std::string head =
            "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: " + std::string(value) + "\r\n\r\n";
        INFO(value);
        accept(head, *r);
        CHECK(r->chunked);
        CHECK(r->has_body());
        CHECK(r->content_length == 0);
    }
    for (const char* value :
         {"gzip", "gzip, chunked", "chunked, chunked", "identity", "", "chunked;q=1", "chunked,"}) {
        INFO(value);
        CHECK(refusal(with_field(std::string("Transfer-Encoding: ") + value)) == 501);
    }
    CHECK(refusal(with_field("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked")) == 501);
    CHECK(refusal(with_field("Transfer-Encoding: chunked\r\nContent-Length: 5")) == 400);
    CHECK(refusal(with_field("Content-Length: 5\r\nTransfer-Encoding: chunked")) == 400);
    CHECK(refusal("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n") == 400);
}

TEST_CASE("Host: exactly one in HTTP/1.1, of host characters", "[http]") {
    auto r = std::make_unique<Request>();
    for (const char* value : {"example.com", "example.com:8080", "[::1]:80", "127.0.0.1", "",
                              "xn--bcher-kva.example", "a_b~c!$&'()*+,;=%41"}) {
        const std::string head = "GET / HTTP/1.1\r\nHost: " + std::string(value) + "\r\n\r\n";
        INFO(value);
        accept(head, *r);
        CHECK(r->host == value);
        CHECK(r->host.data() != nullptr);
    }
    CHECK(refusal("GET / HTTP/1.1\r\n\r\n") == 400);
    CHECK(refusal("GET / HTTP/1.1\r\nX-Host: h\r\n\r\n") == 400);
    CHECK(refusal("GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n") == 400);
    CHECK(refusal("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n") == 400);
    for (const char* value : {"a b", "a/b", "u@h", "a\"b", "a\tb", "h\xc3\xa9", "a?b", "a#b"}) {
        INFO(value);
        CHECK(refusal("GET / HTTP/1.1\r\nHost: " + std::string(value) + "\r\n\r\n") == 400);
    }
}

TEST_CASE("the request line's limit: 414 as soon as it is passed", "[http]") {
    const ParserLimits limits{32, 1024};
    auto r = std::make_unique<Request>();
    std::string line = "GET /" + std::string(32 - 14, 'a') + " HTTP/1.1"; // exactly 32
    REQUIRE(line.size() == 32);
    const std::string fits = with_host(line);
    accept(fits, *r, limits);
    CHECK(refusal(with_host("GET /a" + std::string(32 - 14, 'a') + " HTTP/1.1"), limits) == 414);

    // No CRLF in sight: 32 bytes could still be a line, 33 cannot.
    RequestParser parser(limits);
    const std::string endless(100, 'a');
    CHECK(parser.parse(std::string_view(endless).substr(0, 32), *r) == ParseStatus::incomplete);
    CHECK(parser.parse(std::string_view(endless).substr(0, 33), *r) == ParseStatus::error);
    CHECK(parser.error_status() == 414);
    // Leading empty lines do not count toward it.
    const std::string after_blank = "\r\n\r\n" + fits;
    accept(after_blank, *r, limits);
}

TEST_CASE("the head's limit: 431 as soon as it is passed", "[http]") {
    const ParserLimits limits{64, 128};
    auto r = std::make_unique<Request>();
    const std::string start = "GET / HTTP/1.1\r\nHost: h\r\nX: ";
    const std::string exact = start + std::string(128 - start.size() - 4, 'v') + "\r\n\r\n";
    REQUIRE(exact.size() == 128);
    accept(exact, *r, limits);
    const std::string over = start + std::string(128 - start.size() - 3, 'v') + "\r\n\r\n";
    CHECK(refusal(over, limits) == 431);
    // Leading empty lines count toward the head.
    CHECK(refusal("\r\n" + exact, limits) == 431);

    RequestParser parser(limits);
    const std::string endless = start + std::string(200, 'v');
    CHECK(parser.parse(std::string_view(endless).substr(0, 127), *r) == ParseStatus::incomplete);
    CHECK(parser.parse(std::string_view(endless).substr(0, 128), *r) == ParseStatus::error);
    CHECK(parser.error_status() == 431);
    // A stream of empty lines is bounded by the same limit.
    std::string blank_lines;
    for (int i = 0; i < 100; ++i) blank_lines += "\r\n";
    CHECK(refusal(blank_lines, limits) == 431);
}

TEST_CASE("more than kMaxHeaders fields is 431", "[http]") {
    std::string head = "GET / HTTP/1.1\r\nHost: h\r\n";
    for (std::size_t i = 1; i < kMaxHeaders; ++i) head += "X-" + std::to_string(i) + ": v\r\n";
    auto r = std::make_unique<Request>();
    const std::string full = head + "\r\n";
    accept(full, *r);
    CHECK(r->header_count == kMaxHeaders);
    CHECK(r->headers[kMaxHeaders - 1].name == "X-99");
    CHECK(refusal(head + "X-100: v\r\n\r\n") == 431);
}

TEST_CASE("empty lines before the request line are skipped and counted in the head", "[http]") {
    auto r = std::make_unique<Request>();
    const std::string head = "\r\n\r\nGET /x HTTP/1.1\r\nHost: h\r\n\r\n";
    accept(head, *r);
    CHECK(r->path == "/x");
    CHECK(refusal("\r\n \r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n") == 400);
}

TEST_CASE("an incomplete head stays incomplete, whatever its last byte", "[http]") {
    const std::string head = "GET / HTTP/1.1\r\nHost: h\r\nX: y\r\n\r\n";
    for (std::size_t n = 0; n < head.size(); ++n) {
        RequestParser parser;
        auto r = std::make_unique<Request>();
        INFO(n);
        CHECK(parser.parse(std::string_view(head).substr(0, n), *r) == ParseStatus::incomplete);
    }
}

TEST_CASE("a bad request line is refused before the fields arrive", "[http]") {
    for (const char* start : {"GET / HTTP/1.1 x\r\n", "G@T / HTTP/1.1\r\n", "GET / HTTP/2.0\r\n",
                              "GET * HTTP/1.1\r\n"}) {
        RequestParser parser;
        auto r = std::make_unique<Request>();
        INFO(start);
        CHECK(parser.parse(start, *r) == ParseStatus::error);
    }
}

TEST_CASE("pipelined heads: head_size is exactly the first, and reset() parses the next",
          "[http]") {
    const std::string first = "GET /one HTTP/1.1\r\nHost: h\r\n\r\n";
    const std::string second = "OPTIONS * HTTP/1.0\r\n\r\n";
    const std::string both = first + second;
    auto r = std::make_unique<Request>();
    const Outcome outcome = run(both, *r);
    REQUIRE(outcome.status == ParseStatus::done);
    CHECK(outcome.head_size == first.size());
    CHECK(r->path == "/one");

    RequestParser parser;
    REQUIRE(parser.parse(both, *r) == ParseStatus::done);
    REQUIRE(parser.head_size() == first.size());
    parser.reset();
    CHECK(parser.head_size() == 0);
    const std::string_view rest = std::string_view(both).substr(first.size());
    REQUIRE(parser.parse(rest, *r) == ParseStatus::done);
    CHECK(parser.head_size() == second.size());
    CHECK(r->method == Method::options);
    CHECK(r->path == "*");
    CHECK(r->minor == 0);
    CHECK(r->host.data() == nullptr);
}

TEST_CASE("a body is not swallowed, even one that looks like a request", "[http]") {
    // The phantom request: a connection that took the body for the next head
    // would answer a request the client never sent. The head ends where it
    // ends, and the body's bytes are not looked at (the bare LF in it would
    // be an error in a head).
    const std::string body = "GET /admin HTTP/1.1\r\nHost: h\n\r\nX: \x01\x02\r\n";
    const std::string head =
        "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\n\r\n";
    const std::string all = head + body;
    auto r = std::make_unique<Request>();
    const Outcome outcome = run(all, *r);
    REQUIRE(outcome.status == ParseStatus::done);
    CHECK(outcome.head_size == head.size());
    CHECK(r->content_length == body.size());
    CHECK(r->path == "/upload");
    CHECK(r->header("host") == "h");
}

TEST_CASE("done is repeatable and errors are sticky until reset()", "[http]") {
    RequestParser parser;
    auto r = std::make_unique<Request>();
    const std::string good = with_host("GET /a HTTP/1.1");
    REQUIRE(parser.parse(good, *r) == ParseStatus::done);
    auto again = std::make_unique<Request>();
    CHECK(parser.parse(good, *again) == ParseStatus::done);
    CHECK(describe(*again) == describe(*r));

    parser.reset();
    const std::string bad = "GET / HTTP/1.1\nHost: h\r\n\r\n";
    REQUIRE(parser.parse(bad, *r) == ParseStatus::error);
    CHECK(parser.error_status() == 400);
    CHECK(parser.parse(good, *r) == ParseStatus::error);
    parser.reset();
    CHECK(parser.error_status() == 0);
    CHECK(parser.error_reason().empty());
    CHECK(parser.parse(good, *r) == ParseStatus::done);
    CHECK(r->path == "/a");
}

TEST_CASE("a Request reused for a second head holds only the second's fields", "[http]") {
    auto r = std::make_unique<Request>();
    const std::string first = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                              "Expect: 100-continue\r\nConnection: close\r\n\r\n";
    accept(first, *r);
    CHECK(r->chunked);
    const std::string second = "GET http://b/x HTTP/1.1\r\nHost: c\r\n\r\n";
    accept(second, *r);
    CHECK_FALSE(r->chunked);
    CHECK_FALSE(r->expect_continue);
    CHECK(r->keep_alive);
    CHECK(r->header_count == 1);
    CHECK(r->host == "b");
}

TEST_CASE("every byte value, at every offset of a long value and a long target", "[http]") {
    // The scans read 16 or 32 bytes at a time: a refused byte must be found
    // in any position of a block, and HTAB and obs-text must pass in any.
    auto r = std::make_unique<Request>();
    for (int byte = 0; byte < 256; ++byte) {
        const char c = static_cast<char>(byte);
        const bool value_ok = c == '\t' || (byte >= 0x20 && byte != 0x7f);
        const bool target_ok = byte > 0x20 && byte < 0x7f;
        for (std::size_t offset = 0; offset < 70; ++offset) {
            std::string value(70, 'v');
            value[offset] = c;
            std::string target = "/" + std::string(70, 't');
            target[offset + 1] = c;
            INFO("byte " << byte << " at " << offset);
            RequestParser parser;
            const std::string field = with_field("X-Long: " + value);
            CHECK((parser.parse(field, *r) == ParseStatus::done) == value_ok);
            parser.reset();
            const std::string line = with_host("GET " + target + " HTTP/1.1");
            CHECK((parser.parse(line, *r) == ParseStatus::done) == target_ok);
        }
    }
}

TEST_CASE("every byte value, at every offset of a long field name and a long Host", "[http]") {
    // Names and Host values are checked 16 bytes at a time too, with the
    // full character sets for the rare bytes: each byte must get the same
    // answer in any position.
    const std::string tchar = "!#$%&'*+-.^_`|~";
    const std::string host_extra = "-._~!$&'()*+,;=:[]%";
    auto r = std::make_unique<Request>();
    for (int byte = 0; byte < 256; ++byte) {
        const char c = static_cast<char>(byte);
        const bool alnum =
            (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        const bool name_ok = alnum || tchar.find(c) != std::string::npos;
        const bool host_ok = alnum || host_extra.find(c) != std::string::npos;
        for (std::size_t offset = 1; offset < 39; ++offset) {
            std::string name(40, 'n');
            name[offset] = c;
            std::string host(40, 'h');
            host[offset] = c;
            INFO("byte " << byte << " at " << offset);
            RequestParser parser;
            // A colon inside the name ends it there: the rest is the value.
            const std::string field = with_field(name + ": v");
            CHECK((parser.parse(field, *r) == ParseStatus::done) == (name_ok || c == ':'));
            parser.reset();
            const std::string head = "GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n";
            CHECK((parser.parse(head, *r) == ParseStatus::done) == host_ok);
        }
    }
}
