// MD5 against RFC 1321's test suite (A.5), fed whole and byte by byte, and
// APR1-MD5 against lines Apache's `htpasswd -m` wrote.

#include "util/md5.hpp"

#include "hex.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

using namespace weft;
using test::hex;

namespace {} // namespace

TEST_CASE("md5 gives RFC 1321's test suite digests", "[md5]") {
    const std::pair<std::string_view, std::string_view> suite[] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"1234567890123456789012345678901234567890"
         "1234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    for (const auto& [text, digest] : suite) {
        INFO(text);
        CHECK(hex(Md5::of(text)) == digest);
        Md5 bytewise;
        for (char c : text) bytewise.update(std::string_view(&c, 1));
        CHECK(hex(bytewise.finish()) == digest);
    }
}

TEST_CASE("md5 pads correctly around the 56-byte boundary of a block", "[md5]") {
    // 55, 56 and 64 bytes: the length fits the last block, just does not, and
    // a whole block of message.
    CHECK(hex(Md5::of(std::string(55, 'a'))) == "ef1772b6dff9a122358552954ad0df65");
    CHECK(hex(Md5::of(std::string(56, 'a'))) == "3b0c8ac703f828b04c6c197006d17218");
    CHECK(hex(Md5::of(std::string(64, 'a'))) == "014842d480b571495a4a0363793f7367");
}

TEST_CASE("apr1 hashes equal the lines htpasswd -m wrote", "[md5][apr1]") {
    // htpasswd -nbm USER PASSWORD (apache2-utils 2.4 on Debian 12).
    const std::pair<std::string_view, std::string_view> lines[] = {
        {"pw", "$apr1$PAx5mEhi$IwkWi7ad7i1V7pbrbdb6P0"},
        {"", "$apr1$JaCNEczD$Uil3XHJyjzbEfmR982i5Y0"},
        {"password with spaces", "$apr1$qWwRyOld$Xuhh6lSQjGpOVWkl82mQa1"},
        {"0123456789abcdefghijklmnop", "$apr1$6BK8eC1z$AArTqk6yS.Fr0cGwu./FC/"},
    };
    for (const auto& [password, hash] : lines) {
        INFO(password);
        CHECK(apr1_hash(password, hash) == std::string(hash));
        CHECK(apr1_hash(std::string(password) + "x", hash) != std::string(hash));
    }
}

TEST_CASE("apr1 takes the salt from a setting without the hash, and only apr1's", "[md5][apr1]") {
    CHECK(apr1_hash("pw", "$apr1$PAx5mEhi") ==
          std::string("$apr1$PAx5mEhi$IwkWi7ad7i1V7pbrbdb6P0"));
    CHECK_FALSE(apr1_hash("pw", "$1$PAx5mEhi$"));
    CHECK_FALSE(apr1_hash("pw", "PAx5mEhi"));
}
