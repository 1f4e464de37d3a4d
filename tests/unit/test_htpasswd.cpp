// htpasswd files as Apache's `htpasswd` writes them: each scheme weft
// checks, verified against lines the real tool wrote; what a line may and
// may not be; SHA-1 and HMAC-SHA1 against their RFCs' vectors.

#include "util/htpasswd.hpp"
#include "util/sha1.hpp"

#include "hex.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

using namespace weft;
using test::hex;

namespace {

HtpasswdUser user_of(std::string_view line) {
    std::optional<HtpasswdUser> user;
    std::string error;
    INFO(line);
    REQUIRE(parse_htpasswd_line(line, user, error));
    REQUIRE(user);
    return *user;
}

std::string line_error(std::string_view line) {
    std::optional<HtpasswdUser> user;
    std::string error;
    CHECK_FALSE(parse_htpasswd_line(line, user, error));
    return error;
}

// htpasswd -nb{B,2,5,m,s} (apache2-utils 2.4, Debian 12), password "secret".
constexpr std::string_view kLines[] = {
    "e:$2y$04$FcLRiZRXbX5ezkNMqCFIheCdhlT6jqeCMiqu8r4EMH1AIIEvOQt6S",
    "f:$5$SP3YdRRNY/i4anH0$CRiGPsDSC8IgzZqpXYWfhSR//Ey.ooUzHMTkjQLxcOD",
    "g:$6$f730TElP/a8IPj4T$W8qoyoj7FORZWyTGq9DZKKnlBZDGtgbTZH5lVSYPP2KWFpS/"
    "wkLoupnOXH36n9hrplrMUDhB0wObmM1SvybLc.",
    "a:$apr1$0AuxFfEz$9GWjoXYjhBQ2aMA7rNGJ20",
    "h:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=",
};

} // namespace

TEST_CASE("sha1 gives FIPS 180's digests and HMAC-SHA1 RFC 2202's", "[sha1]") {
    CHECK(hex(Sha1::of("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
    CHECK(hex(Sha1::of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
          "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    Sha1 million;
    const std::string thousand(1000, 'a');
    for (int i = 0; i < 1000; ++i) million.update(thousand);
    CHECK(hex(million.finish()) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    CHECK(hex(hmac_sha1(std::string(20, '\x0b'), {"Hi There"})) ==
          "b617318655057264e28bc0b6fb378c8ef146be00");
    CHECK(hex(hmac_sha1("Jefe", {"what do ya ", "want for nothing?"})) ==
          "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    CHECK(hex(hmac_sha1(std::string(80, '\xaa'),
                        {"Test Using Larger Than Block-Size Key - Hash Key First"})) ==
          "aa4ae5e15272d00e95705637ce8a3b55ed402112");
}

TEST_CASE("htpasswd lines of every scheme weft checks verify their password only", "[htpasswd]") {
    const HashScheme schemes[] = {HashScheme::bcrypt, HashScheme::sha256_crypt,
                                  HashScheme::sha512_crypt, HashScheme::apr1, HashScheme::sha1};
    for (std::size_t i = 0; i < std::size(kLines); ++i) {
        INFO(kLines[i]);
        const HtpasswdUser user = user_of(kLines[i]);
        CHECK(user.scheme == schemes[i]);
        CHECK(is_slow(user.scheme) == (i < 3));
        CHECK(verify_password(user, "secret"));
        CHECK_FALSE(verify_password(user, "secreT"));
        CHECK_FALSE(verify_password(user, "secret "));
        CHECK_FALSE(verify_password(user, ""));
        CHECK_FALSE(verify_password(user, std::string_view("secret\0x", 8)));
    }
}

TEST_CASE("htpasswd lines: comments, blanks, CRLF and a third field", "[htpasswd]") {
    std::optional<HtpasswdUser> user;
    std::string error;
    for (std::string_view skipped : {"", "   ", "# a comment", "  # indented", "\r"}) {
        CHECK(parse_htpasswd_line(skipped, user, error));
        CHECK_FALSE(user);
    }
    const HtpasswdUser crlf = user_of("h:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\r");
    CHECK(crlf.hash == "{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=");
    const HtpasswdUser third = user_of("h:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=:Full Name");
    CHECK(third.name == "h");
    CHECK(verify_password(third, "secret"));
}

TEST_CASE("htpasswd lines that are not user:hash with a hash weft checks are refused",
          "[htpasswd]") {
    CHECK(line_error("alice") == "expected 'user:hash', found no ':'");
    CHECK(line_error(":{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=") == "the user name is empty");
    CHECK(line_error("al\x01ice:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=").find("control") !=
          std::string::npos);
    // Plain text (htpasswd -p) and DES crypt (htpasswd -d).
    CHECK(line_error("f:pw").find("plain-text passwords (htpasswd -p)") != std::string::npos);
    CHECK(line_error("d:R5tDpXcZ6JxZ2").find("DES crypt") != std::string::npos);
    // Hashes cut short or damaged.
    for (std::string_view bad : {
             "e:$2y$04$FcLRiZRXbX5ezkNMqCFIheCdhlT6jqeCMiqu8r4EMH1AIIEvOQt6",
             "e:$2x$04$FcLRiZRXbX5ezkNMqCFIheCdhlT6jqeCMiqu8r4EMH1AIIEvOQt6S",
             "e:$2y$03$FcLRiZRXbX5ezkNMqCFIheCdhlT6jqeCMiqu8r4EMH1AIIEvOQt6S",
             "f:$5$SP3YdRRNY/i4anH0$CRiGPsDSC8IgzZqpXYWfhSR//Ey.ooUzHMTkjQLxcO",
             "f:$5$rounds=$SP3YdRRNY/i4anH0$CRiGPsDSC8IgzZqpXYWfhSR//Ey.ooUzHMTkjQLxcOD",
             "a:$apr1$0AuxFfEz$9GWjoXYjhBQ2aMA7rNGJ2",
             "a:$apr1$$9GWjoXYjhBQ2aMA7rNGJ20A",
             "a:$apr1$0AuxFfEzxx$9GWjoXYjhBQ2aMA7rNGJ20",
             "h:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ",
             "h:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQA",
             "h:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ= ",
         }) {
        INFO(bad);
        CHECK_FALSE(line_error(bad).empty());
    }
    CHECK(user_of("f:$5$rounds=1000$SP3YdRRNY/i4anH0$CRiGPsDSC8IgzZqpXYWfhSR//Ey.ooUzHMTkjQLxcOD")
              .scheme == HashScheme::sha256_crypt);
}

TEST_CASE("an htpasswd file finds its users and names the line of an error", "[htpasswd]") {
    std::string text = "# staff\n\n";
    for (std::string_view line : kLines) text.append(line).append("\n");
    std::string error;
    std::optional<Htpasswd> file = Htpasswd::parse(text, error);
    REQUIRE(file);
    CHECK(file->users().size() == 5);
    REQUIRE(file->find("g"));
    CHECK(file->find("g")->scheme == HashScheme::sha512_crypt);
    CHECK_FALSE(file->find("G"));
    CHECK_FALSE(file->find("zz"));
    CHECK_FALSE(file->find(""));
    // The decoy is the file's first user, whatever the order names sort in.
    REQUIRE(file->decoy());
    CHECK(file->decoy()->name == "e");

    CHECK_FALSE(Htpasswd::parse("# x\na:$apr1$0AuxFfEz$9GWjoXYjhBQ2aMA7rNGJ20\nb:pw\n", error));
    CHECK(error.starts_with("line 3: user 'b': not a hash weft checks"));
    CHECK_FALSE(Htpasswd::parse("a:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\n\n"
                                "a:$apr1$0AuxFfEz$9GWjoXYjhBQ2aMA7rNGJ20\n",
                                error));
    CHECK(error == "line 3: user 'a' is already on line 1");

    std::optional<Htpasswd> empty = Htpasswd::parse("", error);
    REQUIRE(empty);
    CHECK_FALSE(empty->decoy());
}

TEST_CASE("an htpasswd file loads from disk, or says why not with its path", "[htpasswd]") {
    char path[] = "/tmp/weft_htpasswd_XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    {
        std::ofstream out(path);
        out << kLines[3] << "\nbroken\n";
    }
    std::string error;
    CHECK_FALSE(Htpasswd::load(path, error));
    CHECK(error == std::string(path) + ":2: expected 'user:hash', found no ':'");
    {
        std::ofstream out(path);
        out << kLines[3] << "\n";
    }
    std::optional<Htpasswd> file = Htpasswd::load(path, error);
    REQUIRE(file);
    CHECK(file->find("a"));
    unlink(path);
    CHECK_FALSE(Htpasswd::load(path, error));
    CHECK(error == "cannot read " + std::string(path) + ": No such file or directory");
    CHECK_FALSE(Htpasswd::load("/tmp", error));
    CHECK(error == "cannot read /tmp: Invalid argument");
}
