// Basic authentication's pieces outside a loop: the challenge's escaping,
// the Authorization field's decoding, a check (in place: no loop to wait
// on), and a user file that changes under it.

#include "http/basic_auth.hpp"

#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

using namespace weft;
using namespace weft::http;

namespace {

constexpr std::string_view kAlice = "alice:$apr1$0AuxFfEz$9GWjoXYjhBQ2aMA7rNGJ20\n"; // secret
constexpr std::string_view kBob = "bob:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\n";         // secret

struct TempFile {
    std::string path;
    TempFile() {
        char templ[] = "/tmp/weft-basic-auth-XXXXXX";
        const int fd = mkstemp(templ);
        REQUIRE(fd >= 0);
        close(fd);
        path = templ;
    }
    ~TempFile() { unlink(path.c_str()); }
    void write(std::string_view text) const { std::ofstream(path) << text; }
};

std::shared_ptr<UserFile> user_file(const TempFile& file) {
    std::string error;
    std::optional<Htpasswd> users = Htpasswd::load(file.path, error);
    INFO(error);
    REQUIRE(users);
    return std::make_shared<UserFile>(file.path, std::make_shared<const Htpasswd>(*users));
}

// A request with one Authorization field (or none).
struct AuthRequest {
    Request request;
    explicit AuthRequest(std::string_view authorization) {
        if (authorization.data()) {
            request.headers[0] = {"Authorization", authorization};
            request.header_count = 1;
        }
    }
};

AuthVerdict check(const BasicAuth& auth, std::string_view authorization, std::string& user) {
    AuthRequest r(authorization);
    char scratch[256];
    std::string_view name;
    const AuthVerdict verdict = auth.check(r.request, scratch, sizeof scratch, name);
    user = name;
    return verdict;
}

} // namespace

TEST_CASE("the challenge escapes quotes and backslashes in the realm", "[basic_auth]") {
    TempFile file;
    file.write(kAlice);
    const BasicAuth auth(R"(a "b" \c)", user_file(file));
    CHECK(auth.challenge() == R"(Basic realm="a \"b\" \\c", charset="UTF-8")");
}

TEST_CASE("Authorization: Basic decodes strictly, the scheme in any case", "[basic_auth]") {
    char out[64];
    CHECK(decode_basic_credentials("Basic YWxpY2U6c2VjcmV0", out, sizeof out) == 12);
    CHECK(std::string_view(out, 12) == "alice:secret");
    CHECK(decode_basic_credentials("bAsIc \t YWxpY2U6c2VjcmV0 ", out, sizeof out) == 12);
    for (std::string_view bad :
         {"", "Basic", "Basic ", "BasicYWxpY2U6c2VjcmV0", "Bearer YWxpY2U6c2VjcmV0",
          "Basic YWxpY2U6c2VjcmV0=", "Basic YWxpY2U6c2VjcmV", "Basic YWxp Y2U6c2VjcmV0"}) {
        INFO(bad);
        CHECK(decode_basic_credentials(bad, out, sizeof out) == -1);
    }
    CHECK(decode_basic_credentials("Basic YWxpY2U6c2VjcmV0", out, 11) == -1);

    std::string_view user, password;
    CHECK(split_credentials("a:b:c", user, password));
    CHECK(user == "a");
    CHECK(password == "b:c");
    CHECK(split_credentials(":", user, password));
    CHECK(user.empty());
    CHECK_FALSE(split_credentials("ab", user, password));
    CHECK_FALSE(split_credentials(std::string_view("a:b\0c", 5), user, password));
    CHECK_FALSE(split_credentials("a\x7f:b", user, password));
}

TEST_CASE("a check lets in right credentials only, and says the name sent", "[basic_auth]") {
    TempFile file;
    file.write(std::string(kAlice) + std::string(kBob));
    const BasicAuth auth("r", user_file(file));
    std::string user;
    CHECK(check(auth, "Basic YWxpY2U6c2VjcmV0", user) == AuthVerdict::allowed); // alice:secret
    CHECK(user == "alice");
    CHECK(check(auth, "Basic YWxpY2U6c2VjcmV0", user) == AuthVerdict::allowed); // remembered
    CHECK(check(auth, "Basic Ym9iOnNlY3JldA==", user) == AuthVerdict::allowed); // bob:secret
    CHECK(check(auth, "Basic YWxpY2U6c2VjcmVU", user) == AuthVerdict::refused); // alice:secreT
    CHECK(user == "alice");
    CHECK(check(auth, "Basic ZXZlOnNlY3JldA==", user) == AuthVerdict::refused); // eve:secret
    CHECK(user == "eve");
    CHECK(check(auth, {}, user) == AuthVerdict::refused);
    CHECK(user.empty());
}

TEST_CASE("a user file changed on disk is read again, a bad one keeps the users before",
          "[basic_auth]") {
    TempFile file;
    file.write(kAlice);
    std::shared_ptr<UserFile> users = user_file(file);
    const BasicAuth auth("r", users);
    std::string user;
    CHECK(check(auth, "Basic YWxpY2U6c2VjcmV0", user) == AuthVerdict::allowed);
    CHECK(check(auth, "Basic Ym9iOnNlY3JldA==", user) == AuthVerdict::refused);
    file.write(kBob);
    // Looked at once a second, by whichever request comes then.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (check(auth, "Basic Ym9iOnNlY3JldA==", user) != AuthVerdict::allowed &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(check(auth, "Basic Ym9iOnNlY3JldA==", user) == AuthVerdict::allowed);
    // alice was remembered under the old file: forgotten with it.
    CHECK(check(auth, "Basic YWxpY2U6c2VjcmV0", user) == AuthVerdict::refused);

    const std::uint64_t generation = users->generation();
    file.write(std::string(kBob) + "broken\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    CHECK(check(auth, "Basic Ym9iOnNlY3JldA==", user) == AuthVerdict::allowed);
    CHECK(users->generation() == generation);
}
