// Directory listings: escaped names, encoded hrefs, what is hidden
// (files/listing.hpp).

#include "handlers/files/listing.hpp"
#include "temp_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace weft::handlers;

TEST_CASE("listing: escaped names, encoded hrefs, directories with a slash", "[files]") {
    std::vector<ListingEntry> entries(4);
    entries[0] = {"<script>&\"'.txt", ListingEntry::Type::file, 12, 0};
    entries[1] = {"a b:c#d?e%f", ListingEntry::Type::directory, 0, 0};
    entries[2] = {"caf\xc3\xa9", ListingEntry::Type::file, 7, 86400};
    entries[3] = {"link", ListingEntry::Type::other, 0, 0};
    const std::string page = render_listing("/a&b/<x>/", entries);

    CHECK(page.find("<title>Index of /a&amp;b/&lt;x&gt;/</title>") != std::string::npos);
    CHECK(page.find("<a href=\"%3Cscript%3E%26%22%27.txt\">&lt;script&gt;&amp;&quot;&#39;.txt</a>"
                    "</td><td>12</td>") != std::string::npos);
    CHECK(page.find("<a href=\"a%20b%3Ac%23d%3Fe%25f/\">a b:c#d?e%f/</a></td><td>-</td>") !=
          std::string::npos);
    CHECK(page.find("<a href=\"caf%C3%A9\">caf\xc3\xa9</a></td><td>7</td><td>1970-01-02 00:00") !=
          std::string::npos);
    CHECK(page.find("<a href=\"link\">link</a></td><td>-</td>") != std::string::npos);
    CHECK(page.find("<a href=\"../\">") != std::string::npos);
    // No raw markup from a name anywhere.
    CHECK(page.find("<script") == std::string::npos);

    CHECK(render_listing("/", {}).find("../") == std::string::npos);
}

TEST_CASE("listing: a directory's entries, sorted, dotfiles hidden, links not followed",
          "[files]") {
    TempDir dir;
    dir.write("b.txt", "12345");
    dir.write("a.txt", "1");
    dir.write(".env", "SECRET=1");
    std::filesystem::create_directory(dir.path / "sub");
    std::filesystem::create_directory(dir.path / ".git");
    std::filesystem::create_symlink("/etc/passwd", dir.path / "passwd");

    std::vector<ListingEntry> entries;
    const int fd = open(dir.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(read_listing(fd, entries) == 0);
    REQUIRE(entries.size() == 4);
    CHECK(entries[0].name == "a.txt");
    CHECK(entries[0].type == ListingEntry::Type::file);
    CHECK(entries[0].size == 1);
    CHECK(entries[1].name == "b.txt");
    CHECK(entries[1].size == 5);
    CHECK(entries[2].name == "passwd");
    CHECK(entries[2].type == ListingEntry::Type::other);
    CHECK(entries[3].name == "sub");
    CHECK(entries[3].type == ListingEntry::Type::directory);
    CHECK(entries[0].modified > 0);
}
