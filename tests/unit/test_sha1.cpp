// SHA-1 against FIPS 180-4's examples (the NIST "abc", two-block and
// million-'a' vectors), the empty message, and every padding length; updates
// split anywhere give the digest of the whole.

#include "util/sha1.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

using weft::Sha1;

namespace {

std::string hex(const Sha1::Digest& digest) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (std::uint8_t byte : digest) {
        out += kDigits[byte >> 4];
        out += kDigits[byte & 15];
    }
    return out;
}

} // namespace

TEST_CASE("sha1/the FIPS 180-4 example messages", "[util]") {
    CHECK(hex(Sha1::of("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
    CHECK(hex(Sha1::of("")) == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    // 448 bits: the padding needs a second block.
    CHECK(hex(Sha1::of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
          "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    CHECK(hex(Sha1::of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")) ==
          "a49b2446a02c645bf419f995b67091253a04a259");
    CHECK(hex(Sha1::of("The quick brown fox jumps over the lazy dog")) ==
          "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
}

TEST_CASE("sha1/a million 'a', in updates of every size", "[util]") {
    const std::string million(1000000, 'a');
    CHECK(hex(Sha1::of(million)) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    for (std::size_t piece : {1, 3, 63, 64, 65, 1000}) {
        Sha1 sha;
        std::string_view left = million;
        while (!left.empty()) {
            const std::string_view now = left.substr(0, piece);
            sha.update(now);
            left.remove_prefix(now.size());
        }
        INFO(piece);
        CHECK(hex(sha.finish()) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    }
}

TEST_CASE("sha1/split updates give the digest of the whole, at every padding length", "[util]") {
    std::string text;
    for (std::size_t length = 0; length < 200; ++length) {
        const Sha1::Digest whole = Sha1::of(text);
        for (std::size_t cut = 0; cut <= length; ++cut) {
            Sha1 sha;
            sha.update(std::string_view(text).substr(0, cut));
            sha.update(std::string_view(text).substr(cut));
            INFO(length << " cut at " << cut);
            REQUIRE(sha.finish() == whole);
        }
        text += static_cast<char>('a' + length % 26);
    }
    // 55 bytes leave room for the length in the last block, 56 do not.
    CHECK(hex(Sha1::of(std::string(55, 'a'))) == "c1c8bbdc22796e28c0e15163d20899b65621d65a");
    CHECK(hex(Sha1::of(std::string(56, 'a'))) == "c2db330f6083854c99d4b5bfb6e8f29f201be699");
    CHECK(hex(Sha1::of(std::string(64, 'a'))) == "0098ba824b5c16427bd7a1122a5a442a25ec644d");
}
