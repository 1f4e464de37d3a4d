// What handlers refuse before the disk is asked: hidden segments (with
// /.well-known let through), and files never sent as they are on disk.

#include "handlers/files/access.hpp"

#include <catch2/catch.hpp>

#include <memory>

using namespace weft::handlers;
constexpr auto npos = std::string_view::npos;

TEST_CASE("a hidden segment ends where its segment ends") {
    CHECK(dot_segment_end("/.env") == 5);
    CHECK(dot_segment_end("/.git/config") == 5);
    CHECK(dot_segment_end("/wiki/.NET") == 10);
    CHECK(dot_segment_end("/a/.b/c/.d") == 5);
    CHECK(dot_segment_end("/a.b/c.d") == npos);
    CHECK(dot_segment_end("/") == npos);
}

TEST_CASE("/.well-known is served, but nothing hidden beneath it") {
    CHECK(dot_segment_end("/.well-known") == npos);
    CHECK(dot_segment_end("/.well-known/") == npos);
    CHECK(dot_segment_end("/.well-known/acme-challenge/Tok3n") == npos);
    CHECK(dot_segment_end("/.well-known/security.txt") == npos);
    CHECK(dot_segment_end("/.well-known/.secret") == 20);
    // Only at the start of the path, and only the whole segment.
    CHECK(dot_segment_end("/a/.well-known/x") == 14);
    CHECK(dot_segment_end("/.well-knownx") == 13);
    CHECK(has_dot_segment("/.well-known-not"));
}

TEST_CASE("editor backups, leftovers and script sources are never served") {
    for (const char* name :
         {"/x.php~", "/a/config.php.bak", "/#index.php#", "/.x.php.swp", "/x.swo", "/x.orig",
          "/LocalSettings.php.save", "/x.rej", "/index.php", "/a/b.PHP", "/x.phtml", "/x.phar",
          "/x.phps", "/x.php5", "/x.php8", "index.php", "/dir/x.Bak"})
        CHECK(is_never_served(name));
    // Copies of a script, and twins of any of these.
    for (const char* name : {"/x.phpx", "/x.php9", "/x.php.old", "/x.php.txt", "/x.php.", "/x.php_",
                             "/x.php-", "/x.php.1", "/config.inc", "/x.php.gz", "/x.php.br",
                             "/a.html.bak.gz", "/x.tmp", "/x.dist", "/x.PHP.GZ", "/x~.gz"})
        CHECK(is_never_served(name));
    for (const char* name :
         {"/", "/a/", "/style.css", "/x.ph", "/php", "/php.ini", "/a.php/readme.txt", "/backup",
          "/x.baked", "/#a", "", "/#", "/x.photo.jpg", "/x.pharmacy.html", "/a.gz",
          "/report.old.pdf", "/style.css.gz", "/.gz"})
        CHECK_FALSE(is_never_served(name));
}

TEST_CASE("every leftover extension is refused in any case, and no near miss is") {
    for (const char* extension : {"bak", "orig", "save", "swp", "swo", "rej", "old", "tmp", "temp",
                                  "dist", "backup", "bk", "copy", "inc"}) {
        const std::string lower = std::string("/a/x.") + extension;
        std::string upper = lower;
        for (char& c : upper) c = weft::ascii::to_upper(c);
        CHECK(is_never_served(lower));
        CHECK(is_never_served(upper));
        CHECK(is_never_served(lower + ".gz"));
        CHECK_FALSE(is_never_served(lower + "x"));
        CHECK_FALSE(is_never_served(lower.substr(0, lower.size() - 1)));
        CHECK_FALSE(is_never_served(lower + ".txt")); // only a script's is refused anywhere
    }
    for (const char* name : {"/x.b", "/x.k", "/x.backups", "/x.copyright", "/x.incl", "/x.temps",
                             "/x.oldest", "/x.ph", "/x.phar2", "/x.phtm", "/x.pht", "/x.bkp"})
        CHECK_FALSE(is_never_served(name));
}

TEST_CASE("a twin's suffix is taken off in any case, only after a '.' and a name") {
    CHECK(without_twin_suffix("/a.css.gz") == "/a.css");
    CHECK(without_twin_suffix("/a.css.GZ") == "/a.css");
    CHECK(without_twin_suffix("/a.css.Br") == "/a.css");
    CHECK(without_twin_suffix("/a.css.zSt") == "/a.css");
    CHECK(without_twin_suffix("x.gz") == "x");
    CHECK(without_twin_suffix(".gz") == ".gz");
    CHECK(without_twin_suffix(".zst") == ".zst");
    CHECK(without_twin_suffix("/a.css.gzip") == "/a.css.gzip");
    CHECK(without_twin_suffix("/a.cssgz") == "/a.cssgz");
    CHECK(without_twin_suffix("/a.css.bz") == "/a.css.bz");
    CHECK(without_twin_suffix("/a.css.zs") == "/a.css.zs");
}

TEST_CASE("lower_word: names of up to 8 bytes apart, in any case, a start in the low bytes") {
    static_assert(lower_word("BaK") == lower_word("bak"));
    static_assert(lower_word("bak") != lower_word("ba"));
    static_assert(lower_word("abcdefgh") != lower_word("abcdefg"));
    static_assert((lower_word("php5") & 0xffffff) == word_of("php"));
    static_assert(lower_word("abcdefghi") == lower_word("abcdefgh")); // the first 8 only
    static_assert(lower_word("") == 0);
    CHECK(lower_word(std::string_view("\xc4K", 2)) == 0x6bc4u); // a byte above 0x7f stays
}

TEST_CASE("lower_word at run time: every byte at every place of every length, read in place") {
    const auto reference = [](std::string_view text) {
        std::uint64_t word = 0;
        for (std::size_t i = 0; i < text.size() && i < 8; ++i) {
            unsigned char c = static_cast<unsigned char>(text[i]);
            if (c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c + 'a' - 'A');
            word |= std::uint64_t{c} << (8 * i);
        }
        return word;
    };
    for (std::size_t n = 0; n <= 10; ++n) {
        // An allocation of exactly n bytes: the sanitizers see a read past it.
        const auto bytes = std::make_unique<char[]>(n);
        const std::string_view text(bytes.get(), n);
        for (std::size_t at = 0; at < n; ++at) {
            for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>('G' + i);
            for (int b = 0; b < 256; ++b) {
                bytes[at] = static_cast<char>(b);
                if (lower_word(text) != reference(text))
                    FAIL("length " << n << ", byte " << b << " at " << at);
            }
        }
        if (n == 0) CHECK(lower_word(text) == 0);
    }
}

TEST_CASE("access: any segment starting with a dot is refused", "[files]") {
    CHECK(has_dot_segment("/.env"));
    CHECK(has_dot_segment("/.git/config"));
    CHECK(has_dot_segment("/a/.htaccess"));
    CHECK(has_dot_segment("/a/.hidden/"));
    CHECK(has_dot_segment("/a/b/.x"));
    CHECK_FALSE(has_dot_segment("/"));
    CHECK_FALSE(has_dot_segment("/index.html"));
    CHECK_FALSE(has_dot_segment("/a.b/c.d"));
    CHECK_FALSE(has_dot_segment("/a/b./c"));
    CHECK_FALSE(has_dot_segment("/well-known./x"));
}

namespace {

bool denied(std::vector<std::string> texts, std::string_view path) {
    PathPatterns patterns;
    std::string error;
    REQUIRE(compile_patterns(texts, true, patterns, error));
    return any_matches(patterns, path);
}

} // namespace

TEST_CASE("access: deny prefixes match whole segments", "[files]") {
    CHECK(denied({"/private"}, "/private"));
    CHECK(denied({"/private"}, "/private/"));
    CHECK(denied({"/private"}, "/private/x/y"));
    CHECK_FALSE(denied({"/private"}, "/privateer"));
    CHECK_FALSE(denied({"/private"}, "/privat"));
    CHECK_FALSE(denied({"/private"}, "/public/private"));
    CHECK(denied({"/a/b"}, "/a/b"));
    CHECK_FALSE(denied({"/a/b"}, "/a/bc"));
    CHECK(denied({"/"}, "/anything"));
    CHECK(denied({"/"}, "/"));
    // A trailing '/' covers the directory itself too, as it always has.
    CHECK(denied({"/private/"}, "/private"));
    CHECK(denied({"/private//"}, "/private/x"));
    CHECK_FALSE(denied({"/private/"}, "/privateer"));
    CHECK_FALSE(denied({}, "/private"));
}

TEST_CASE("access: deny names and globs", "[files]") {
    const std::vector<std::string> deny{"/vendor", "composer.json", "*.less", "/w/**/*.md"};
    CHECK(denied(deny, "/vendor/autoload.php"));
    CHECK(denied(deny, "/composer.json"));
    CHECK(denied(deny, "/w/extensions/x/composer.json"));
    CHECK_FALSE(denied(deny, "/composer.json/x"));
    CHECK_FALSE(denied(deny, "/composer.jsonx"));
    CHECK(denied(deny, "/skins/a.less"));
    CHECK_FALSE(denied(deny, "/skins/a.less.css"));
    CHECK(denied(deny, "/w/a/README.md"));
    CHECK_FALSE(denied(deny, "/x/README.md"));
    CHECK_FALSE(denied(deny, "/w/a.css"));
    PathPatterns patterns;
    std::string error;
    CHECK_FALSE(compile_patterns({"/ok", "/x{a"}, true, patterns, error));
    CHECK(error == "bad pattern '/x{a': unclosed '{' at 3");
}
