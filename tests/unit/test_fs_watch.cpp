// The loop's watch of changes on disk: stamps go stale when what they watch
// changes, when their directory goes, and all at once when events are lost;
// and a loop hears of a change before it serves bytes that came after it.

#include "loop/fs_watch.hpp"
#include "loop/io.hpp"
#include "loop/loop.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using weft::FsWatch;
using weft::Loop;
using weft::WatchStamp;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        std::string name = (fs::temp_directory_path() / "weft-fswatch-XXXXXX").string();
        REQUIRE(mkdtemp(name.data()) != nullptr);
        path = name;
    }
    ~TempDir() { fs::remove_all(path); }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(path / name) << text;
    }
};

struct LoopOnThisThread {
    weft::FdTable table{};
    Loop loop{table};
    FsWatch* watch = nullptr;
    LoopOnThisThread() {
        REQUIRE(loop.open() == 0);
        watch = loop.fs_watch();
        REQUIRE(watch != nullptr);
    }
};

} // namespace

TEST_CASE("a write, a rename over and a removal each make the entry's stamp stale", "[loop]") {
    LoopOnThisThread l;
    TempDir dir;
    dir.write("f", "one");
    for (const auto& change : std::vector<std::function<void()>>{
             [&] { dir.write("f", "two"); },
             [&] {
                 dir.write("g.tmp", "three");
                 fs::rename(dir.path / "g.tmp", dir.path / "f");
             },
             [&] { fs::remove(dir.path / "f"); }, [&] { dir.write("f", "back"); }}) {
        WatchStamp stamp;
        REQUIRE(l.watch->watch(dir.path.c_str(), "f", stamp) == 0);
        l.watch->drain();
        CHECK(l.watch->current(stamp));
        const std::uint64_t before = l.watch->changes();
        change();
        l.watch->drain();
        CHECK_FALSE(l.watch->current(stamp));
        CHECK(l.watch->changes() > before);
    }
}

TEST_CASE("a directory removed makes all its stamps stale, for good", "[loop]") {
    LoopOnThisThread l;
    TempDir dir;
    fs::create_directory(dir.path / "sub");
    const std::string sub = (dir.path / "sub").string();
    WatchStamp a, b;
    REQUIRE(l.watch->watch(sub.c_str(), "a", a) == 0);
    REQUIRE(l.watch->watch(sub.c_str(), "b", b) == 0);
    CHECK(l.watch->directories() == 1);
    fs::remove(dir.path / "sub");
    l.watch->drain();
    CHECK_FALSE(l.watch->current(a));
    CHECK_FALSE(l.watch->current(b));
    CHECK(l.watch->directories() == 0);
    // A new directory reuses the record: the old stamps stay stale.
    fs::create_directory(dir.path / "sub");
    WatchStamp again;
    REQUIRE(l.watch->watch(sub.c_str(), "a", again) == 0);
    CHECK(l.watch->current(again));
    CHECK_FALSE(l.watch->current(a));
    // What is no directory cannot be watched, and says so.
    WatchStamp none;
    CHECK(l.watch->watch((dir.path / "missing").c_str(), "a", none) == -ENOENT);
    dir.write("file", "x");
    CHECK(l.watch->watch((dir.path / "file").c_str(), "a", none) == -ENOTDIR);
}

TEST_CASE("an overflowed event queue makes every stamp stale", "[loop]") {
    LoopOnThisThread l;
    TempDir quiet, busy;
    WatchStamp elsewhere, here;
    REQUIRE(l.watch->watch(quiet.path.c_str(), "f", elsewhere) == 0);
    REQUIRE(l.watch->watch(busy.path.c_str(), "f", here) == 0);
    long queued = 16384;
    std::ifstream("/proc/sys/fs/inotify/max_queued_events") >> queued;
    // Each new file written and closed is two events (created, closed).
    for (long i = 0; i < queued / 2 + 64; ++i) {
        const int fd =
            ::open((busy.path / std::to_string(i)).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        ::close(fd);
    }
    l.watch->drain();
    CHECK_FALSE(l.watch->current(elsewhere));
    CHECK_FALSE(l.watch->current(here));
}

TEST_CASE("a drain after reading bytes hears of every change made before them", "[loop]") {
    // The connection is readable (bytes "A") before the change, so epoll
    // lists it before the inotify fd, and the loop starts its coroutine
    // before it has drained the change; bytes "B" come after the change and
    // are read with "A". A drain after the read (what a cache does before it
    // trusts its stamps) hears of the change.
    LoopOnThisThread l;
    TempDir dir;
    dir.write("f", "one");
    WatchStamp stamp;
    REQUIRE(l.watch->watch(dir.path.c_str(), "f", stamp) == 0);
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    std::string read_bytes;
    bool current_when_read = true;
    const std::uint16_t handler = l.loop.add_handler([&](int fd) -> std::int64_t {
        char buffer[16];
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) {
            read_bytes.append(buffer, static_cast<std::size_t>(n));
            l.watch->drain();
            current_when_read = l.watch->current(stamp);
        }
        return weft::yield_value(weft::Op::want_read);
    });
    REQUIRE(l.loop.adopt(sv[0], handler) == 0);
    l.loop.spawn([&] {
        REQUIRE(::write(sv[1], "A", 1) == 1);
        dir.write("f", "two");
        REQUIRE(::write(sv[1], "B", 1) == 1);
        weft::io::sleep(50);
        Loop::current()->stop(0ms);
    });
    l.loop.run();
    ::close(sv[1]);
    CHECK(read_bytes == "AB");
    CHECK_FALSE(current_when_read);
}

TEST_CASE("a loop watches a bounded number of directories, then says ENOSPC", "[loop]") {
    LoopOnThisThread l;
    TempDir dir;
    WatchStamp stamp{};
    for (std::size_t i = 0; i < FsWatch::kMaxDirectories + 2; ++i) {
        const fs::path sub = dir.path / std::to_string(i);
        fs::create_directory(sub);
        const int result = l.watch->watch(sub.c_str(), "f", stamp);
        INFO(i);
        CHECK(result == (i < FsWatch::kMaxDirectories ? 0 : -ENOSPC));
    }
    CHECK(l.watch->directories() == FsWatch::kMaxDirectories);
    // A directory already watched is still watched at the cap.
    CHECK(l.watch->watch((dir.path / "0").c_str(), "g", stamp) == 0);
}

TEST_CASE("a file's own watch hears writes through a hard link no directory watch covers",
          "[loop]") {
    LoopOnThisThread l;
    TempDir served, elsewhere;
    served.write("f", "one");
    const std::string file = (served.path / "f").string();
    WatchStamp entry, own;
    REQUIRE(l.watch->watch(served.path.c_str(), "f", entry) == 0);
    REQUIRE(l.watch->watch_file(file.c_str(), own) == 0);
    CHECK(l.watch->files() == 1);
    CHECK(l.watch->directories() == 1);
    l.watch->drain();
    REQUIRE(l.watch->current(own));

    // A second name, made after the watch: the link count changes.
    fs::create_hard_link(file, elsewhere.path / "g");
    l.watch->drain();
    CHECK_FALSE(l.watch->current(own));

    // A write through it, after a fresh stamp: the directory's watch hears
    // nothing (what made the file watch necessary), the file's does.
    REQUIRE(l.watch->watch(served.path.c_str(), "f", entry) == 0);
    REQUIRE(l.watch->watch_file(file.c_str(), own) == 0);
    CHECK(l.watch->files() == 1); // the same inode, the same watch
    l.watch->drain();
    elsewhere.write("g", "two");
    l.watch->drain();
    CHECK(l.watch->current(entry));
    CHECK_FALSE(l.watch->current(own));

    // Its last name gone, the watch goes with it.
    fs::remove(file);
    fs::remove(elsewhere.path / "g");
    l.watch->drain();
    CHECK(l.watch->files() == 0);
    CHECK(l.watch->directories() == 1);
}

TEST_CASE("a loop watches a bounded number of files, apart from its directories", "[loop]") {
    LoopOnThisThread l;
    TempDir dir;
    WatchStamp stamp{};
    for (std::size_t i = 0; i < FsWatch::kMaxFiles + 2; ++i) {
        const std::string name = std::to_string(i);
        dir.write(name, "x");
        const int result = l.watch->watch_file((dir.path / name).c_str(), stamp);
        INFO(i);
        CHECK(result == (i < FsWatch::kMaxFiles ? 0 : -ENOSPC));
    }
    CHECK(l.watch->files() == FsWatch::kMaxFiles);
    CHECK(l.watch->watch(dir.path.c_str(), "0", stamp) == 0);
    CHECK(l.watch->directories() == 1);
}
