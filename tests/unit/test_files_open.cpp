// Opening files beneath a root: what stays inside opens, nothing outside
// does, by either resolver, whatever the symlinks in the tree say.

#include "handlers/files/open.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

using namespace weft::handlers;
namespace fs = std::filesystem;

namespace {

// base/secret.txt and base/outside/ lie outside base/root, the root served.
struct Tree {
    fs::path base;
    fs::path root;
    OwnedFd root_fd;

    Tree() {
        std::string name = (fs::temp_directory_path() / "weft-open-XXXXXX").string();
        REQUIRE(mkdtemp(name.data()) != nullptr);
        base = name;
        root = base / "root";
        fs::create_directories(root / "sub" / "deeper");
        fs::create_directories(base / "outside");
        write(base / "secret.txt", "SECRET");
        write(base / "outside" / "inner.txt", "OUTSIDE");
        write(root / "a.txt", "A");
        write(root / "sub" / "b.txt", "B");
        write(root / "sub" / "deeper" / "c.txt", "C");
        // Symlinks that stay inside the root...
        fs::create_symlink("a.txt", root / "in_link");
        fs::create_symlink("../a.txt", root / "sub" / "up_link");
        fs::create_symlink("sub", root / "dir_link");
        // ...and ones that leave it, every way there is.
        fs::create_symlink("../secret.txt", root / "out_link");
        fs::create_symlink("sub/../../secret.txt", root / "winding_link");
        fs::create_symlink((base / "secret.txt").string(), root / "abs_link");
        fs::create_symlink((root / "a.txt").string(), root / "abs_inside");
        fs::create_symlink("../outside", root / "dir_out");
        fs::create_symlink("/proc/self/root" + (base / "secret.txt").string(), root / "proc_link");
        fs::create_symlink("/proc/self/fd/0", root / "magic_link");
        fs::create_symlink("loop_b", root / "loop_a");
        fs::create_symlink("loop_a", root / "loop_b");
        REQUIRE(mkfifo((root / "fifo").c_str(), 0600) == 0);
        root_fd.reset(open_root(root.c_str()));
        REQUIRE(root_fd.get() >= 0);
    }
    ~Tree() { fs::remove_all(base); }

    static void write(const fs::path& path, const std::string& content) {
        std::ofstream(path, std::ios::binary) << content;
    }
};

// The file's content, or "errno N" when it did not open.
std::string read_beneath(const Tree& tree, const char* relative, Resolver resolver) {
    const int fd = open_beneath(tree.root_fd.get(), relative, resolver);
    if (fd < 0) return "errno " + std::to_string(-fd);
    OwnedFd owned(fd);
    char buffer[64];
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0) return "read errno " + std::to_string(errno);
    return {buffer, static_cast<std::size_t>(n)};
}

std::string error(int e) {
    return "errno " + std::to_string(e);
}

bool is_directory(const Tree& tree, const char* relative, Resolver resolver) {
    OwnedFd fd(open_beneath(tree.root_fd.get(), relative, resolver));
    struct stat st {};
    return fd.get() >= 0 && fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

TEST_CASE("open: plain files and directories beneath the root, both resolvers", "[files]") {
    Tree tree;
    for (const Resolver r : {Resolver::openat2, Resolver::walk}) {
        INFO((r == Resolver::walk ? "walk" : "openat2"));
        if (r == Resolver::openat2 && probe_resolver(tree.root_fd.get()) != Resolver::openat2)
            continue; // a kernel before 5.6
        CHECK(read_beneath(tree, "a.txt", r) == "A");
        CHECK(read_beneath(tree, "sub/b.txt", r) == "B");
        CHECK(read_beneath(tree, "sub/deeper/c.txt", r) == "C");
        CHECK(read_beneath(tree, "sub//b.txt", r) == "B");
        CHECK(is_directory(tree, "", r));
        CHECK(is_directory(tree, "sub", r));
        CHECK(is_directory(tree, "sub/", r));
        CHECK(read_beneath(tree, "missing", r) == error(ENOENT));
        CHECK(read_beneath(tree, "sub/missing/x", r) == error(ENOENT));
        CHECK(read_beneath(tree, "a.txt/", r) == error(ENOTDIR));
        CHECK(read_beneath(tree, "a.txt/x", r) == error(ENOTDIR));
        CHECK(read_beneath(tree, std::string(300, 'n').c_str(), r) == error(ENAMETOOLONG));
    }
}

TEST_CASE("open: nothing outside the root, by dot segments or symlinks", "[files]") {
    Tree tree;
    for (const Resolver r : {Resolver::openat2, Resolver::walk}) {
        INFO((r == Resolver::walk ? "walk" : "openat2"));
        if (r == Resolver::openat2 && probe_resolver(tree.root_fd.get()) != Resolver::openat2)
            continue;
        for (const char* escape : {"../secret.txt", "sub/../../secret.txt", "./../secret.txt", "..",
                                   "out_link", "winding_link", "abs_link", "dir_out/inner.txt",
                                   "dir_out", "proc_link", "magic_link", "loop_a"}) {
            INFO(escape);
            const std::string result = read_beneath(tree, escape, r);
            CHECK(result.rfind("errno ", 0) == 0);
            CHECK(result != "SECRET");
            CHECK(result != "OUTSIDE");
        }
        CHECK(read_beneath(tree, "../secret.txt", r) == error(EXDEV));
        CHECK(read_beneath(tree, "out_link", r) == error(r == Resolver::walk ? ELOOP : EXDEV));
    }
    // Absolute paths are relative to the root's directory fd only by name:
    // openat2 refuses them, and the walk reads "/" as an empty component.
    if (probe_resolver(tree.root_fd.get()) == Resolver::openat2)
        CHECK(read_beneath(tree, (tree.base / "secret.txt").c_str(), Resolver::openat2) ==
              error(EXDEV));
    CHECK(read_beneath(tree, (tree.base / "secret.txt").c_str(), Resolver::walk) == error(ENOENT));
}

TEST_CASE("open: symlinks inside the root are followed by openat2 only", "[files]") {
    Tree tree;
    if (probe_resolver(tree.root_fd.get()) == Resolver::openat2) {
        CHECK(read_beneath(tree, "in_link", Resolver::openat2) == "A");
        CHECK(read_beneath(tree, "sub/up_link", Resolver::openat2) == "A");
        CHECK(read_beneath(tree, "dir_link/b.txt", Resolver::openat2) == "B");
        // An absolute link that names a file inside is followed (openat2
        // refuses it; the file it reached is checked to be beneath).
        CHECK(read_beneath(tree, "abs_inside", Resolver::openat2) == "A");
    }
    CHECK(read_beneath(tree, "in_link", Resolver::walk) == error(ELOOP));
    CHECK(read_beneath(tree, "sub/up_link", Resolver::walk) == error(ELOOP));
    CHECK(read_beneath(tree, "dir_link/b.txt", Resolver::walk) == error(ENOTDIR));
    CHECK(read_beneath(tree, "abs_inside", Resolver::walk) == error(ELOOP));
}

TEST_CASE("open: a hard link is the file itself, and a FIFO does not block", "[files]") {
    Tree tree;
    // A hard link inside the root *is* a name of the tree: the kernel cannot
    // tell it from any other, so it opens (as with nginx). Only the owner of
    // the root can make one, and none can point at a directory.
    REQUIRE(link((tree.base / "secret.txt").c_str(), (tree.root / "hard.txt").c_str()) == 0);
    CHECK(link((tree.base / "outside").c_str(), (tree.root / "hard_dir").c_str()) != 0);
    for (const Resolver r : {Resolver::openat2, Resolver::walk}) {
        if (r == Resolver::openat2 && probe_resolver(tree.root_fd.get()) != Resolver::openat2)
            continue;
        CHECK(read_beneath(tree, "hard.txt", r) == "SECRET");
        // O_NONBLOCK: a FIFO with no writer opens at once; the handler then
        // sees it is not a regular file.
        OwnedFd fd(open_beneath(tree.root_fd.get(), "fifo", r));
        REQUIRE(fd.get() >= 0);
        struct stat st {};
        REQUIRE(fstat(fd.get(), &st) == 0);
        CHECK(S_ISFIFO(st.st_mode));
    }
}

TEST_CASE("open: the root itself, and OwnedFd", "[files]") {
    Tree tree;
    CHECK(open_root((tree.base / "nope").c_str()) == -ENOENT);
    CHECK(open_root((tree.root / "a.txt").c_str()) == -ENOTDIR);
    // Descriptors opened beneath the root are close-on-exec.
    OwnedFd fd(open_beneath(tree.root_fd.get(), "a.txt", Resolver::walk));
    REQUIRE(fd.get() >= 0);
    CHECK((fcntl(fd.get(), F_GETFD) & FD_CLOEXEC) != 0);

    const int raw = fd.get();
    OwnedFd moved(std::move(fd));
    CHECK(fd.get() == -1);
    CHECK(moved.get() == raw);
    moved.reset();
    CHECK(fcntl(raw, F_GETFD) == -1); // closed
    CHECK(errno == EBADF);
}

TEST_CASE("open: Resolver::follow goes where symlinks lead, as nginx by default", "[files]") {
    Tree tree;
    const Resolver r = Resolver::follow;
    CHECK(read_beneath(tree, "a.txt", r) == "A");
    CHECK(read_beneath(tree, "abs_link", r) == "SECRET");
    CHECK(read_beneath(tree, "dir_out/inner.txt", r) == "OUTSIDE");
    CHECK(is_directory(tree, "", r));
    CHECK(read_beneath(tree, "a.txt/", r) == error(ENOTDIR));
    CHECK(read_beneath(tree, "missing", r) == error(ENOENT));
}
