// The small-file cache: keys, the byte bound, eviction order, pinning and
// stamps (files/cache.hpp).

#include "handlers/files/cache.hpp"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <string>

using namespace weft::handlers;
using E = Encoding;

namespace {
CachedFile file_of(std::string body) {
    CachedFile file;
    file.body = std::move(body);
    file.stamp.size = file.body.size();
    return file;
}
} // namespace

TEST_CASE("cache: keyed by path and encoding, and an entry replaced", "[files]") {
    FileCache cache(1 << 20);
    CHECK(cache.find("/a", E::identity) == nullptr);
    REQUIRE(cache.insert("/a", E::identity, file_of("plain")) != nullptr);
    REQUIRE(cache.insert("/a", E::br, file_of("brotli")) != nullptr);
    CachedFile absent;
    absent.absent = true;
    REQUIRE(cache.insert("/a", E::gzip, std::move(absent)) != nullptr);
    CHECK(cache.size() == 3);
    CHECK(cache.find("/a", E::identity)->body == "plain");
    CHECK(cache.find("/a", E::br)->body == "brotli");
    CHECK(cache.find("/a", E::gzip)->absent);
    CHECK(cache.find("/a/", E::identity) == nullptr);

    cache.insert("/a", E::identity, file_of("new"));
    CHECK(cache.size() == 3);
    CHECK(cache.find("/a", E::identity)->body == "new");
    cache.erase("/a", E::br);
    CHECK(cache.find("/a", E::br) == nullptr);
    CHECK(cache.size() == 2);
    CHECK(cache.bytes() == 3 + 2 * 2 + 2 * FileCache::kEntryOverhead); // bodies, keys
}

TEST_CASE("cache: bounded in bytes, the least recently used go first", "[files]") {
    const std::size_t entry = 1000 + 2 + FileCache::kEntryOverhead;
    FileCache cache(3 * entry);
    const std::string k(1000, 'x');
    cache.insert("/1", E::identity, file_of(k));
    cache.insert("/2", E::identity, file_of(k));
    cache.insert("/3", E::identity, file_of(k));
    CHECK(cache.bytes() == 3 * entry);
    REQUIRE(cache.find("/1", E::identity) != nullptr); // /2 is now the oldest
    cache.insert("/4", E::identity, file_of(k));
    CHECK(cache.bytes() <= 3 * entry);
    CHECK(cache.find("/2", E::identity) == nullptr);
    CHECK(cache.find("/1", E::identity) != nullptr);
    CHECK(cache.find("/3", E::identity) != nullptr);
    CHECK(cache.find("/4", E::identity) != nullptr);
    // Too big alone: refused, and nothing evicted for it.
    CHECK(cache.insert("/big", E::identity, file_of(std::string(3 * entry, 'y'))) == nullptr);
    CHECK(cache.size() == 3);
    // Many evictions in a row keep the list and the count consistent.
    for (int i = 0; i < 100; ++i)
        cache.insert("/n" + std::to_string(i), E::identity, file_of(std::string(100, 'z')));
    CHECK(cache.bytes() <= 3 * entry);
    CHECK(cache.find("/n99", E::identity) != nullptr);
    CHECK(cache.find("/4", E::identity) == nullptr);
}

TEST_CASE("cache: many entries, erased from the middle of probe runs", "[files]") {
    FileCache cache(64 << 20);
    const auto key = [](int i) { return "/f/" + std::to_string(i); };
    for (int i = 0; i < 2000; ++i) {
        const Encoding e = i % 3 == 0 ? E::identity : i % 3 == 1 ? E::gzip : E::br;
        REQUIRE(cache.insert(key(i), e, file_of(std::to_string(i))) != nullptr);
    }
    CHECK(cache.size() == 2000);
    for (int i = 0; i < 2000; i += 2) {
        const Encoding e = i % 3 == 0 ? E::identity : i % 3 == 1 ? E::gzip : E::br;
        cache.erase(key(i), e);
    }
    CHECK(cache.size() == 1000);
    for (int i = 0; i < 2000; ++i) {
        const Encoding e = i % 3 == 0 ? E::identity : i % 3 == 1 ? E::gzip : E::br;
        const CachedFile* file = cache.find(key(i), e);
        INFO(i);
        if (i % 2 == 0) {
            CHECK(file == nullptr);
        } else {
            REQUIRE(file != nullptr);
            CHECK(file->body == std::to_string(i));
            CHECK(cache.find(key(i), e == E::br ? E::gzip : E::br) == nullptr);
        }
    }
}

TEST_CASE("cache: a pinned entry outlives its eviction until unpinned", "[files]") {
    FileCache cache(2 * (1000 + 2 + FileCache::kEntryOverhead));
    CachedFile* sending = cache.insert("/a", E::identity, file_of(std::string(1000, 'a')));
    REQUIRE(sending != nullptr);
    {
        const FilePin pin(cache, *sending);
        // Replaced, then the replacement evicted: the pinned bytes stay.
        cache.insert("/a", E::identity, file_of(std::string(1000, 'b')));
        cache.insert("/b", E::identity, file_of(std::string(1000, 'c')));
        cache.insert("/c", E::identity, file_of(std::string(1000, 'd')));
        CHECK(cache.find("/a", E::identity) == nullptr);
        CHECK(cache.retired() == 1);
        CHECK(sending->body == std::string(1000, 'a')); // ASan would see a use after free
        const FilePin again(cache, *sending);
    }
    CHECK(cache.retired() == 0);
    // An entry pinned and unpinned while in the table stays in it.
    CachedFile* c = cache.find("/c", E::identity);
    REQUIRE(c != nullptr);
    { const FilePin pin(cache, *c); }
    CHECK(cache.find("/c", E::identity) == c);
    CHECK(cache.retired() == 0);
}

TEST_CASE("cache: a stamp tells versions of a file apart", "[files]") {
    struct stat a {};
    a.st_ino = 7;
    a.st_size = 100;
    a.st_mtim.tv_sec = 1000;
    a.st_mtim.tv_nsec = 1;
    a.st_dev = 3;
    struct stat b = a;
    CHECK(FileStamp::of(a) == FileStamp::of(b));
    b.st_mtim.tv_nsec = 2;
    CHECK_FALSE(FileStamp::of(a) == FileStamp::of(b));
    b = a;
    b.st_dev = 4;
    CHECK_FALSE(FileStamp::of(a) == FileStamp::of(b));
    b = a;
    b.st_size = 101;
    CHECK_FALSE(FileStamp::of(a) == FileStamp::of(b));
    b = a;
    b.st_ctim.tv_nsec = 9; // rewritten, its mtime put back
    CHECK_FALSE(FileStamp::of(a) == FileStamp::of(b));
}
