#include "handlers/fastcgi/spool.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <string>

using weft::handlers::Spool;

namespace {

// Bytes that never repeat in a short stretch: position i holds i mod 251.
std::string pattern(std::size_t from, std::size_t n) {
    std::string out(n, '\0');
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<char>((from + i) % 251);
    return out;
}

// Takes up to `n` bytes from the front, as a client that reads that much.
std::string take(Spool& spool, std::size_t n) {
    std::string out;
    while (out.size() < n && !spool.empty()) {
        const std::string_view front = spool.front();
        REQUIRE(!front.empty());
        const std::size_t k = std::min(front.size(), n - out.size());
        out.append(front.substr(0, k));
        spool.take(k);
    }
    return out;
}

} // namespace

TEST_CASE("a spool gives back what it was given, in order, through memory and its file",
          "[spool]") {
    Spool spool(1024, 1 << 20);
    std::size_t put = 0, got = 0;
    // Puts and takes of uneven sizes, so the file fills, drains and is
    // truncated while memory keeps the newest bytes.
    for (int round = 0; round < 200; ++round) {
        const std::size_t in = 37 + static_cast<std::size_t>(round * 97 % 3000);
        REQUIRE(spool.put(pattern(put, in)) == 0);
        put += in;
        const std::size_t out = round % 3 == 0 ? 5000 : static_cast<std::size_t>(round * 31 % 900);
        const std::string bytes = take(spool, out);
        CHECK(bytes == pattern(got, bytes.size()));
        got += bytes.size();
        CHECK(spool.size() == put - got);
    }
    const std::string rest = take(spool, put - got);
    CHECK(rest == pattern(got, rest.size()));
    CHECK(spool.empty());
}

TEST_CASE("a spool takes no more than its memory and its file's maximum", "[spool]") {
    Spool spool(1024, 4096);
    CHECK(spool.room() == 1024 + 4096);
    REQUIRE(spool.put(pattern(0, 5000)) == 0);
    CHECK(spool.room() == 120);
    CHECK(spool.put(pattern(5000, 121)) == -EFBIG);
    REQUIRE(spool.put(pattern(5000, 120)) == 0);
    CHECK(spool.room() == 0);
    // Draining the file gives its room back.
    CHECK(take(spool, 5120) == pattern(0, 5120));
    CHECK(spool.room() == 1024 + 4096);
}

TEST_CASE("memory only: a spool without a file holds its memory's worth", "[spool]") {
    Spool spool(1024, 0);
    REQUIRE(spool.put(pattern(0, 1000)) == 0);
    CHECK(take(spool, 600) == pattern(0, 600));
    REQUIRE(spool.put(pattern(1000, 624)) == 0); // the taken front is room again
    CHECK(spool.put(pattern(1624, 1)) == -EFBIG);
    CHECK(take(spool, 2000) == pattern(600, 1024));
}

TEST_CASE("a request body is read back at any offset, again and again", "[spool]") {
    Spool spool(8 * 1024, ~std::uint64_t{0});
    std::size_t size = 0;
    while (size < 50'000) {
        std::size_t room = 3000;
        char* into = spool.reserve(room);
        REQUIRE(into);
        const std::string bytes = pattern(size, room);
        std::copy(bytes.begin(), bytes.end(), into);
        spool.commit(room);
        size += room;
    }
    CHECK(spool.size() == size);
    for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t offset = 0; offset < size; offset += 7001) {
            std::string out(std::min<std::size_t>(7001, size - offset), '\0');
            REQUIRE(spool.read(offset, out.data(), out.size()) == 0);
            CHECK(out == pattern(offset, out.size()));
        }
    }
}
