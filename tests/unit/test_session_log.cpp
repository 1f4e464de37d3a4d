// The access log's line for a session that outlived its request: the
// request's fields copied at the hand-over, its end's status, bytes and note
// as one more quoted field; ordinary lines unchanged; the log kept open by
// the session after its server (its other owner) let go.

#include "http/access_log.hpp"
#include "http/session_log.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

using namespace weft::http;

namespace {

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The line with its time replaced by "[time]".
std::string without_time(const std::string& line) {
    static const std::regex time(R"(\[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\])");
    return std::regex_replace(line, time, "[time]");
}

} // namespace

TEST_CASE("a session's line ends with its note, an ordinary line has none", "[http]") {
    TempDir dir;
    const std::string path = (dir.path / "access.log").string();
    std::string error;
    auto log = std::make_shared<AccessLog>(path, error);
    REQUIRE(log->ok());
    // Outside a loop each line is written at once.
    AccessLogEntry entry{"10.0.0.7",    "", "ann", "GET /live/chat HTTP/1.1", 101, 0, "http://x/",
                         "agent \"7\"", {}};
    log->write(entry);
    std::string request_line = "GET /live/chat HTTP/1.1";
    auto session = std::make_unique<SessionLog>(log, entry);
    request_line.assign(request_line.size(), 'x'); // the entry's strings were copied
    std::weak_ptr<AccessLog> alive = log;
    log.reset(); // the server's reference goes (a reload)
    REQUIRE_FALSE(alive.expired());
    session->write(101, 1234, "ws 1008 send queue full");
    session->write(200, 5, "sse \"quoted\"\n");
    session.reset();
    CHECK(alive.expired());
    CHECK(without_time(read_file(path)) ==
          "10.0.0.7 - ann [time] \"GET /live/chat HTTP/1.1\" 101 0 \"http://x/\" "
          "\"agent \\x227\\x22\"\n"
          "10.0.0.7 - ann [time] \"GET /live/chat HTTP/1.1\" 101 1234 \"http://x/\" "
          "\"agent \\x227\\x22\" \"ws 1008 send queue full\"\n"
          "10.0.0.7 - ann [time] \"GET /live/chat HTTP/1.1\" 200 5 \"http://x/\" "
          "\"agent \\x227\\x22\" \"sse \\x22quoted\\x22\\x0A\"\n");
}

TEST_CASE("a note keeps its room in a line whose fields are cut", "[http]") {
    TempDir dir;
    const std::string path = (dir.path / "access.log").string();
    std::string error;
    auto log = std::make_shared<AccessLog>(path, error);
    REQUIRE(log->ok());
    const std::string long_field(8000, 'a');
    SessionLog session(log, {"1.2.3.4", "", "", long_field, 101, 0, long_field, long_field, {}});
    session.write(101, 0, "ws 1000 closed by client");
    const std::string text = read_file(path);
    CHECK(text.size() <= 4096);
    INFO(text.substr(text.size() > 300 ? text.size() - 300 : 0));
    CHECK(text.ends_with("\" \"ws 1000 closed by client\"\n"));
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}
