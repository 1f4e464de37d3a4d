// What a path beneath a root depends on, watched component by component
// (symlinks included), and a root that follows its symlink when a deploy
// switches it.

#include "handlers/files/path_watch.hpp"
#include "loop/loop.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace weft::handlers;
using weft::FsWatch;
using weft::Loop;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        std::string name = (fs::temp_directory_path() / "weft-pathwatch-XXXXXX").string();
        REQUIRE(mkdtemp(name.data()) != nullptr);
        path = name;
    }
    ~TempDir() { fs::remove_all(path); }
    void write(const std::string& name, const std::string& text) const {
        fs::create_directories((path / name).parent_path());
        std::ofstream(path / name) << text;
    }
};

struct Watching {
    weft::FdTable table{};
    Loop loop{table};
    FsWatch* watch = nullptr;
    Watching() {
        REQUIRE(loop.open() == 0);
        watch = loop.fs_watch();
        REQUIRE(watch != nullptr);
    }
};

void switch_link(const fs::path& link, const std::string& target) {
    const fs::path tmp = link.string() + ".new";
    fs::create_directory_symlink(target, tmp);
    fs::rename(tmp, link);
}

ino_t inode_of(int fd) {
    struct stat st {};
    REQUIRE(fstat(fd, &st) == 0);
    return st.st_ino;
}

} // namespace

TEST_CASE("path watch: each component is watched, and a change of any goes stale") {
    Watching w;
    TempDir dir;
    dir.write("a/b/c.txt", "one");
    PathWatch pw;
    struct stat st {};
    REQUIRE(watch_path(*w.watch, dir.path.string(), "a/b/c.txt", pw, st) ==
            static_cast<int>(Walked::found));
    CHECK(pw.stamps.size() == 3);
    CHECK(S_ISREG(st.st_mode));
    w.watch->drain();
    CHECK(pw.current(*w.watch));
    dir.write("a/b/c.txt", "two");
    w.watch->drain();
    CHECK_FALSE(pw.current(*w.watch));

    // The middle directory replaced by rename.
    REQUIRE(watch_path(*w.watch, dir.path.string(), "a/b/c.txt", pw, st) ==
            static_cast<int>(Walked::found));
    dir.write("a/b2/c.txt", "three");
    fs::rename(dir.path / "a" / "b", dir.path / "a" / "b.old");
    fs::rename(dir.path / "a" / "b2", dir.path / "a" / "b");
    w.watch->drain();
    CHECK_FALSE(pw.current(*w.watch));
}

TEST_CASE("path watch: a missing path is watched up to what is missing") {
    Watching w;
    TempDir dir;
    PathWatch pw;
    struct stat st {};
    REQUIRE(watch_path(*w.watch, dir.path.string(), "nope/x.php", pw, st) ==
            static_cast<int>(Walked::missing));
    w.watch->drain();
    CHECK(pw.current(*w.watch));
    dir.write("nope/x.php", "<?php");
    w.watch->drain();
    CHECK_FALSE(pw.current(*w.watch));
}

TEST_CASE("path watch: a symlink on the way, switched, goes stale") {
    Watching w;
    TempDir dir;
    dir.write("v1/f.txt", "one");
    dir.write("v2/f.txt", "two");
    fs::create_directory_symlink("v1", dir.path / "link");
    PathWatch pw;
    struct stat st {};
    REQUIRE(watch_path(*w.watch, dir.path.string(), "link/f.txt", pw, st) ==
            static_cast<int>(Walked::found));
    CHECK(pw.stamps.size() == 3); // link, v1 (its target), f.txt
    w.watch->drain();
    CHECK(pw.current(*w.watch));
    switch_link(dir.path / "link", "v2");
    w.watch->drain();
    CHECK_FALSE(pw.current(*w.watch));
}

TEST_CASE("loop root: follows a switched symlink, with or without a watch") {
    TempDir dir;
    dir.write("releases/1/x", "1");
    dir.write("releases/2/x", "2");
    dir.write("releases/3/x", "3");
    fs::create_directory_symlink("releases/1", dir.path / "current");
    const std::string real = fs::canonical(dir.path).string();
    Watching w;
    for (FsWatch* watch : {w.watch, static_cast<FsWatch*>(nullptr)}) {
        switch_link(dir.path / "current", "releases/1");
        w.watch->drain();
        LoopRoot root((dir.path / "current").string());
        const int first = root.fd(watch);
        REQUIRE(first >= 0);
        const std::uint64_t generation = root.generation();
        CHECK(*root.real_path() == real + "/releases/1");
        CHECK(root.fd(watch) == first);
        CHECK(root.generation() == generation);

        switch_link(dir.path / "current", "releases/2");
        w.watch->drain();
        const int second = root.fd(watch);
        REQUIRE(second >= 0);
        CHECK(root.generation() == generation + 1);
        CHECK(*root.real_path() == real + "/releases/2");
        struct stat want {};
        REQUIRE(stat((dir.path / "releases/2").c_str(), &want) == 0);
        CHECK(inode_of(second) == want.st_ino);

        // A moment without the link keeps the last directory.
        fs::remove(dir.path / "current");
        w.watch->drain();
        CHECK(inode_of(root.fd(watch)) == want.st_ino);
        fs::create_directory_symlink("releases/3", dir.path / "current");
        w.watch->drain();
        CHECK(*root.real_path() != real + "/releases/3"); // not asked yet
        REQUIRE(root.fd(watch) >= 0);
        CHECK(*root.real_path() == real + "/releases/3");
    }
}
