// The PARAMS stream a script gets for a request (fastcgi/params.hpp), byte
// for byte: every pair's lengths and bytes written out here, in the order
// nginx's fastcgi.conf sends them, then the request's fields as HTTP_*.

#include "event_helpers.hpp"
#include "handlers/fastcgi/params.hpp"
#include "http/parser.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace weft;
using namespace weft::handlers;

namespace {

int collect(void* into, const char* bytes, std::size_t size) {
    static_cast<std::string*>(into)->append(bytes, size);
    return 0;
}

// One pair with 1-byte lengths (both under 128), as the spec lays it out.
std::string pair(char name_length, char value_length, std::string_view name,
                 std::string_view value) {
    return std::string{name_length, value_length} + std::string(name) + std::string(value);
}

} // namespace

TEST_CASE("params: a POST to a front controller, byte for byte", "[fastcgi]") {
    const std::string session = "sid=" + std::string(160, 'x'); // a value of 128 bytes or more
    const std::string head = "POST /index.php/user/7?a=1&b=2 HTTP/1.1\r\n"
                             "Host: example.com:8080\r\n"
                             "User-Agent: curl/8.5.0\r\n"
                             "Accept: */*\r\n"
                             "X-Forwarded-For: 10.0.0.1\r\n"
                             "Cookie: " +
                             session +
                             "\r\n"
                             "Content-Type: application/x-www-form-urlencoded\r\n"
                             "Content-Length: 7\r\n"
                             "X-Real_IP: 6.6.6.6\r\n"
                             "Cookie: b=2\r\n"
                             "Proxy: http://evil.example/\r\n"
                             "X-Forwarded-For: 10.0.0.2\r\n"
                             "\r\n";
    http::RequestParser parser;
    http::Request request;
    REQUIRE(parser.parse(head, request) == http::ParseStatus::done);

    const std::string extra = extra_params({{"APP_ENV", "prod"}});
    ScriptParams params;
    params.document_root = "/srv/app";
    params.script_name = "/index.php";
    params.script_file = "/index.php";
    params.path_info = "/user/7";
    params.document_uri = "/index.php/user/7";
    params.request_uri = request.target;
    params.query = request.query;
    params.method = request.method_name;
    params.content_length = "7";
    params.server_name = "example.com";
    params.extra = extra;
    EndpointTexts texts;
    std::strcpy(texts.remote_address, "127.0.0.1");
    std::strcpy(texts.remote_port, "54321");
    std::strcpy(texts.server_address, "127.0.0.1");
    std::strcpy(texts.server_port, "8080");
    Endpoints endpoints;
    endpoints.encode(texts);

    std::string sent;
    char buffer[4096];
    fastcgi::RecordWriter writer(buffer, sizeof buffer, collect, &sent);
    write_params(writer, request, params, endpoints);
    writer.end_params();
    REQUIRE(writer.flush() == 0);

    // version 1, PARAMS (4), request id 1, content length 902 (0x0386), no
    // padding; then the pairs; then the empty PARAMS record.
    std::string expected("\x01\x04\x00\x01\x03\x86\x00\x00", 8);
    expected += pair(15, 18, "SCRIPT_FILENAME", "/srv/app/index.php");
    expected += pair(11, 10, "SCRIPT_NAME", "/index.php");
    expected += pair(9, 7, "PATH_INFO", "/user/7");
    expected += pair(15, 15, "PATH_TRANSLATED", "/srv/app/user/7");
    expected += pair(11, 25, "REQUEST_URI", "/index.php/user/7?a=1&b=2");
    expected += pair(12, 17, "DOCUMENT_URI", "/index.php/user/7");
    expected += pair(12, 7, "QUERY_STRING", "a=1&b=2");
    expected += pair(14, 4, "REQUEST_METHOD", "POST");
    expected += pair(12, 33, "CONTENT_TYPE", "application/x-www-form-urlencoded");
    expected += pair(14, 1, "CONTENT_LENGTH", "7");
    expected += pair(13, 8, "DOCUMENT_ROOT", "/srv/app");
    expected += pair(17, 7, "GATEWAY_INTERFACE", "CGI/1.1");
    expected += pair(15, 4, "SERVER_SOFTWARE", "weft");
    expected += pair(15, 3, "REDIRECT_STATUS", "200");
    expected += pair(15, 8, "SERVER_PROTOCOL", "HTTP/1.1");
    expected += pair(14, 4, "REQUEST_SCHEME", "http");
    expected += pair(11, 9, "REMOTE_ADDR", "127.0.0.1");
    expected += pair(11, 5, "REMOTE_PORT", "54321");
    expected += pair(11, 9, "SERVER_ADDR", "127.0.0.1");
    expected += pair(11, 4, "SERVER_PORT", "8080");
    expected += pair(11, 11, "SERVER_NAME", "example.com");
    // Fields in the order they first came; repeated ones joined, Cookie
    // with "; "; X-Real_IP (an '_') and Proxy (httpoxy) left out.
    expected += pair(9, 16, "HTTP_HOST", "example.com:8080");
    expected += pair(15, 10, "HTTP_USER_AGENT", "curl/8.5.0");
    expected += pair(11, 3, "HTTP_ACCEPT", "*/*");
    expected += pair(20, 18, "HTTP_X_FORWARDED_FOR", "10.0.0.1, 10.0.0.2");
    // A value of 169 bytes: its length in four bytes, the high bit set.
    expected += std::string("\x0b\x80\x00\x00\xa9", 5) + "HTTP_COOKIE" + session + "; b=2";
    expected += pair(17, 33, "HTTP_CONTENT_TYPE", "application/x-www-form-urlencoded");
    expected += pair(19, 1, "HTTP_CONTENT_LENGTH", "7");
    expected += pair(7, 4, "APP_ENV", "prod");
    expected += std::string("\x01\x04\x00\x01\x00\x00\x00\x00", 8);

    CHECK(sent.size() == expected.size());
    CHECK(sent == expected);

    // Through a buffer too small for the pairs before the fields: written
    // pair by pair, in more records, the same pairs.
    std::string small_sent;
    char small[200];
    fastcgi::RecordWriter small_writer(small, sizeof small, collect, &small_sent);
    write_params(small_writer, request, params, endpoints);
    small_writer.end_params();
    REQUIRE(small_writer.flush() == 0);
    const auto contents = [](std::string_view records) {
        std::string joined;
        int count = 0;
        while (records.size() >= 8) {
            const std::size_t length = static_cast<unsigned char>(records[4]) << 8 |
                                       static_cast<unsigned char>(records[5]);
            joined.append(records.substr(8, length));
            records.remove_prefix(8 + length);
            ++count;
        }
        return std::pair{joined, count};
    };
    CHECK(contents(small_sent).first == contents(sent).first);
    CHECK(contents(small_sent).second > 2);
}

TEST_CASE("params: the ends of a TCP connection as REMOTE_ADDR, REMOTE_PORT, SERVER_ADDR, "
          "SERVER_PORT text",
          "[fastcgi]") {
    // Loopback addresses whose octets have one, two and three digits, and
    // zeros; the ports the kernel gave.
    const auto bound = [](const char* address, std::uint16_t port) {
        const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        inet_pton(AF_INET, address, &a.sin_addr);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        return fd;
    };
    const auto port_of = [](int fd) {
        sockaddr_in a{};
        socklen_t length = sizeof a;
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length);
        return std::to_string(ntohs(a.sin_port));
    };
    const int listener = bound("127.200.0.9", 0);
    REQUIRE(listen(listener, 1) == 0);
    sockaddr_in to{};
    socklen_t length = sizeof to;
    getsockname(listener, reinterpret_cast<sockaddr*>(&to), &length);
    const int client = bound("127.10.0.255", 0);
    REQUIRE(connect(client, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
    const int accepted = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    REQUIRE(accepted >= 0);

    Endpoints endpoints;
    test::EventLoop t;
    t.spawn([&] { endpoints.look_up(accepted); });
    t.run();
    CHECK(endpoints.param("REQUEST_SCHEME") == "http");
    CHECK(endpoints.param("HTTPS").empty());
    CHECK(endpoints.param("REMOTE_ADDR") == "127.10.0.255");
    CHECK(endpoints.param("REMOTE_PORT") == port_of(client));
    CHECK(endpoints.param("SERVER_ADDR") == "127.200.0.9");
    CHECK(endpoints.param("SERVER_PORT") == port_of(listener));

    // The connection's next request: the same text, and the same pairs.
    Endpoints again;
    t.spawn([&] { again.look_up(accepted); });
    t.run();
    CHECK(again.param("REMOTE_PORT") == port_of(client));
    CHECK(std::string_view(again.pairs, again.pairs_size) ==
          std::string_view(endpoints.pairs, endpoints.pairs_size));

    // Another connection on the same fd number, from another port: its own
    // port, never the one the fd's last connection had.
    const int second_client = bound("127.10.0.255", 0);
    REQUIRE(connect(second_client, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
    const int second = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    REQUIRE(second >= 0);
    REQUIRE(dup2(second, accepted) == accepted);
    Endpoints other;
    test::EventLoop fresh; // whose table has not noted the fd's ends yet
    fresh.spawn([&] { other.look_up(accepted); });
    fresh.run();
    CHECK(other.param("REMOTE_PORT") == port_of(second_client));
    CHECK(other.param("REMOTE_PORT") != endpoints.param("REMOTE_PORT"));
    for (const int fd : {accepted, second, second_client, client, listener}) close(fd);
}

namespace {

// The PARAMS stream write_params sends for the inputs, through a writer of
// `capacity` bytes.
std::string sent_params(const http::Request& request, const ScriptParams& params,
                        const Endpoints& endpoints, std::size_t capacity = 4096) {
    std::string sent;
    std::vector<char> buffer(capacity);
    fastcgi::RecordWriter writer(buffer.data(), buffer.size(), collect, &sent);
    writer.begin_request(true);
    write_params(writer, request, params, endpoints);
    writer.end_params();
    REQUIRE(writer.flush() == 0);
    return sent;
}

// What write_params sends without a slot to keep the pairs in.
std::string written_anew(const http::Request& request, const ScriptParams& params,
                         const Endpoints& endpoints, std::size_t capacity = 4096) {
    Endpoints no_slot = endpoints;
    no_slot.fd = -1;
    return sent_params(request, params, no_slot, capacity);
}

struct Inputs {
    std::string head;
    http::Request request;
    std::string extra = extra_params({{"APP_ENV", "prod"}});
    ScriptParams params;
    EndpointTexts texts;
    Endpoints endpoints;

    explicit Inputs(std::string head_text) : head(std::move(head_text)) {
        http::RequestParser parser;
        REQUIRE(parser.parse(head, request) == http::ParseStatus::done);
        params.document_root = "/srv/app";
        params.script_name = "/index.php";
        params.script_file = "/index.php";
        params.path_info = "/user/7";
        params.document_uri = "/index.php/user/7";
        params.request_uri = request.target;
        params.query = request.query;
        params.method = request.method_name;
        params.content_length = "";
        params.server_name = "example.com";
        params.extra = extra;
        std::strcpy(texts.remote_address, "127.0.0.1");
        std::strcpy(texts.remote_port, "54321");
        std::strcpy(texts.server_address, "127.0.0.1");
        std::strcpy(texts.server_port, "8080");
        endpoints.encode(texts);
        endpoints.fd = 5;
    }
};

const std::string kHead = "GET /index.php/user/7?a=1 HTTP/1.1\r\n"
                          "Host: example.com\r\n"
                          "User-Agent: curl/8.5.0\r\n"
                          "Cookie: a=1\r\n"
                          "\r\n";

} // namespace

TEST_CASE("params: a request whose inputs are the last one's on its slot gets the same pairs, "
          "copied",
          "[fastcgi]") {
    Inputs a(kHead);
    const std::string expected = written_anew(a.request, a.params, a.endpoints);
    CHECK(sent_params(a.request, a.params, a.endpoints) == expected); // kept
    const std::uint64_t reused = reused_params();
    // The same bytes from another buffer: the copy.
    Inputs again(kHead);
    CHECK(sent_params(again.request, again.params, again.endpoints) == expected);
    CHECK(reused_params() == reused + 1);
    CHECK(sent_params(again.request, again.params, again.endpoints) == expected);
    CHECK(reused_params() == reused + 2);
}

TEST_CASE("params: any input that differs, by as little as a byte, gets pairs of its own",
          "[fastcgi]") {
    // Each change keeps every size: only the bytes tell them apart.
    const auto changes = std::vector<std::pair<const char*, void (*)(Inputs&)>>{
        {"document_root", [](Inputs& i) { i.params.document_root = "/srv/apq"; }},
        {"script_name", [](Inputs& i) { i.params.script_name = "/indey.php"; }},
        {"script_file", [](Inputs& i) { i.params.script_file = "/indey.php"; }},
        {"path_info", [](Inputs& i) { i.params.path_info = "/user/8"; }},
        {"document_uri", [](Inputs& i) { i.params.document_uri = "/index.php/user/8"; }},
        {"request_uri", [](Inputs& i) { i.params.request_uri = "/index.php/user/7?a=2"; }},
        {"query", [](Inputs& i) { i.params.query = "a=2"; }},
        {"method", [](Inputs& i) { i.params.method = "PUT"; }},
        {"content_length", [](Inputs& i) { i.params.content_length = "0"; }},
        {"server_name", [](Inputs& i) { i.params.server_name = "example.org"; }},
        {"extra", [](Inputs& i) { i.extra.back() = 'e'; }},
        {"remote_user", [](Inputs& i) { i.request.remote_user = "bob"; }},
        {"the version", [](Inputs& i) { i.head.replace(i.head.find("1.1"), 3, "1.0"); }},
        {"a field's value", [](Inputs& i) { i.head.replace(i.head.find("a=1\r"), 3, "a=2"); }},
        {"a field's name", [](Inputs& i) { i.head.replace(i.head.find("Cookie"), 6, "Cookiz"); }},
        {"a field's name's case", [](Inputs& i) { i.head.replace(i.head.find("Cookie"), 1, "c"); }},
        {"a field more", [](Inputs& i) { i.head.insert(i.head.size() - 2, "X-A: 1\r\n"); }},
        {"a field fewer", [](Inputs& i) { i.head.erase(i.head.find("Cookie"), 13); }},
        {"the remote port", [](Inputs& i) { std::strcpy(i.texts.remote_port, "54322"); }},
        {"https", [](Inputs& i) { i.texts.https = true; }},
    };
    for (const auto& [what, change] : changes) {
        INFO(what);
        Inputs base(kHead);
        const std::string base_pairs = written_anew(base.request, base.params, base.endpoints);
        sent_params(base.request, base.params, base.endpoints); // kept
        // The change, parsed and encoded again as a connection would.
        Inputs changed(kHead);
        change(changed);
        http::RequestParser parser;
        const std::string_view user = changed.request.remote_user;
        REQUIRE(parser.parse(changed.head, changed.request) == http::ParseStatus::done);
        changed.request.remote_user = user;
        // The views into the head follow it (a change may have moved its
        // bytes), unless the change was to that view itself.
        const std::string_view changed_view = what;
        if (changed_view != "request_uri") changed.params.request_uri = changed.request.target;
        if (changed_view != "query") changed.params.query = changed.request.query;
        if (changed_view != "method") changed.params.method = changed.request.method_name;
        changed.params.extra = changed.extra;
        changed.endpoints.encode(changed.texts);
        const std::string expected =
            written_anew(changed.request, changed.params, changed.endpoints);
        const std::uint64_t reused = reused_params();
        CHECK(sent_params(changed.request, changed.params, changed.endpoints) == expected);
        CHECK(reused_params() == reused);
        // And back: the base again, its own pairs.
        CHECK(sent_params(base.request, base.params, base.endpoints) == base_pairs);
    }
}

TEST_CASE("params: a request not as sent (an error page's) is neither kept nor copied",
          "[fastcgi]") {
    Inputs a(kHead);
    a.endpoints.fd = 11;
    const std::string expected = written_anew(a.request, a.params, a.endpoints);
    CHECK(sent_params(a.request, a.params, a.endpoints) == expected); // kept
    // The error page's request: its head's views, but fields of its own.
    Inputs page(kHead);
    page.endpoints.fd = 11;
    page.request.head = {};
    page.request.header_count = 1; // Host alone
    const std::string page_pairs = written_anew(page.request, page.params, page.endpoints);
    REQUIRE(page_pairs != expected);
    const std::uint64_t reused = reused_params();
    for (int i = 0; i < 3; ++i)
        CHECK(sent_params(page.request, page.params, page.endpoints) == page_pairs);
    CHECK(reused_params() == reused);
    // The client's own request is still copied: the page kept nothing.
    CHECK(sent_params(a.request, a.params, a.endpoints) == expected);
    CHECK(reused_params() == reused + 1);
}

TEST_CASE("params: two connections on one slot each get their own pairs", "[fastcgi]") {
    Inputs a(kHead);
    Inputs b(kHead);
    std::strcpy(b.texts.remote_port, "54329");
    b.endpoints.encode(b.texts);
    b.endpoints.fd = a.endpoints.fd + 64; // the same slot
    const std::string a_pairs = written_anew(a.request, a.params, a.endpoints);
    const std::string b_pairs = written_anew(b.request, b.params, b.endpoints);
    REQUIRE(a_pairs != b_pairs);
    for (int round = 0; round < 3; ++round) {
        CHECK(sent_params(a.request, a.params, a.endpoints) == a_pairs);
        CHECK(sent_params(b.request, b.params, b.endpoints) == b_pairs);
    }
    // A new connection on the same fd, from another port: its own.
    CHECK(sent_params(a.request, a.params, a.endpoints) == a_pairs);
    CHECK(sent_params(a.request, a.params, b.endpoints) == b_pairs);
}

TEST_CASE("params: pairs through a flush are not kept, and a copy never goes through one",
          "[fastcgi]") {
    // A head larger than the writer's buffer: the pairs go out in pieces.
    Inputs big("GET /index.php/user/7?a=1 HTTP/1.1\r\nHost: example.com\r\nX-Big: " +
               std::string(1200, 'b') + "\r\n\r\n");
    big.endpoints.fd = 7;
    const std::string expected = written_anew(big.request, big.params, big.endpoints);
    const std::string in_pieces = written_anew(big.request, big.params, big.endpoints, 1024);
    REQUIRE(in_pieces != expected); // more records
    const std::uint64_t reused = reused_params();
    for (int i = 0; i < 2; ++i)
        CHECK(sent_params(big.request, big.params, big.endpoints, 1024) == in_pieces);
    CHECK(reused_params() == reused);

    // Kept through a large buffer, then asked for through a small one: the
    // pairs do not fit it whole, so they are written anew, in pieces.
    CHECK(sent_params(big.request, big.params, big.endpoints) == expected);
    CHECK(sent_params(big.request, big.params, big.endpoints, 1024) == in_pieces);
    CHECK(reused_params() == reused);
    // The pieces emptied the slot, whose entry went unused: it waits two
    // misses, keeps the pairs, then copies them.
    for (int i = 0; i < 3; ++i)
        CHECK(sent_params(big.request, big.params, big.endpoints) == expected);
    CHECK(reused_params() == reused + 1);
}

TEST_CASE("params: a slot whose entries go unused keeps fewer, and one copy makes it keep again",
          "[fastcgi]") {
    Inputs base(kHead);
    base.endpoints.fd = 9;
    // Every request another: the slot's entries go unused.
    std::vector<std::string> queries;
    for (int i = 0; i < 40; ++i) queries.push_back("q=" + std::to_string(100 + i));
    const std::uint64_t reused = reused_params();
    for (const std::string& query : queries) {
        Inputs other = base;
        other.params.query = query;
        sent_params(other.request, other.params, other.endpoints);
    }
    CHECK(reused_params() == reused);
    // Then the same request again and again: kept after at most 2^4 misses.
    const std::string expected = written_anew(base.request, base.params, base.endpoints);
    int misses = 0;
    while (reused_params() == reused && misses < 40) {
        CHECK(sent_params(base.request, base.params, base.endpoints) == expected);
        ++misses;
    }
    CHECK(misses > 2);   // it waited
    CHECK(misses <= 17); // at most 16 misses, then the copy
    // A copy made: another head is kept at once, and copied next time.
    Inputs other = base;
    other.params.query = "z=1";
    const std::string other_pairs = written_anew(other.request, other.params, other.endpoints);
    CHECK(sent_params(other.request, other.params, other.endpoints) == other_pairs);
    const std::uint64_t before = reused_params();
    CHECK(sent_params(other.request, other.params, other.endpoints) == other_pairs);
    CHECK(reused_params() == before + 1);
}
