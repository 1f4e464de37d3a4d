// Which script a path runs: the split is decided by weft from what exists
// beneath the root, so a path the backend would "fix up" never runs a file
// that is not a script.

#include "event_helpers.hpp"
#include "handlers/fastcgi/scripts.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

using namespace weft::handlers;
namespace fs = std::filesystem;
using Kind = ScriptTarget::Kind;
using weft::config::Route;

namespace {

// root/: index.php, app.php, info.php, style.css, uploads/a.jpg (PHP inside),
// sub/index.php, plain/ (no index), dir.php/ (a directory), data/x.php,
// .env, and a link out of the root to a script outside.
struct Site {
    fs::path base;
    fs::path root;
    OwnedFd root_fd;

    Site() {
        std::string name = (fs::temp_directory_path() / "weft-scripts-XXXXXX").string();
        REQUIRE(mkdtemp(name.data()) != nullptr);
        base = name;
        root = base / "root";
        for (const char* dir : {"uploads", "sub", "plain", "dir.php", "data", ".git", "both"})
            fs::create_directories(root / dir);
        for (const char* file :
             {"index.php", "app.php", "info.php", "style.css", "sub/index.php", "data/x.php",
              ".env", "plain/readme.txt", ".git/config", "both/index.html", "both/index.php"})
            write(root / file, "<?php echo 1;");
        write(root / "uploads" / "a.jpg", "<?php echo 'EXECUTED';");
        write(base / "outside.php", "<?php echo 'OUTSIDE';");
        fs::create_symlink("../outside.php", root / "out.php");
        root_fd.reset(open_root(root.c_str()));
        REQUIRE(root_fd.get() >= 0);
    }
    ~Site() { fs::remove_all(base); }

    static PathPatterns patterns(const std::vector<std::string>& texts) {
        PathPatterns out;
        std::string error;
        REQUIRE(compile_patterns(texts, true, out, error));
        return out;
    }

    // With `deny`, `scripts` and `alias` (the rest as resolver()'s).
    ScriptResolver with_rules(std::vector<std::string> deny, std::vector<std::string> scripts,
                              std::string fallback = {}, PathMap paths = {{}, "", ""}) const {
        ScriptRules rules;
        rules.extensions = {".php"};
        rules.index = {"index.php"};
        rules.fallback = std::move(fallback);
        rules.deny = patterns(deny);
        rules.scripts = patterns(scripts);
        std::string directory = paths.aliased() ? paths.directory() : root.string();
        rules.paths = std::move(paths);
        return ScriptResolver(std::move(directory), probe_resolver(root_fd.get()),
                              std::move(rules));
    }

    static void write(const fs::path& path, const std::string& content) {
        std::ofstream(path) << content;
    }

    ScriptResolver resolver(bool static_files = true, std::string fallback = {}) const {
        ScriptRules rules;
        rules.extensions = {".php"};
        rules.index = {"index.php"};
        rules.static_files = static_files;
        rules.fallback = std::move(fallback);
        rules.deny = patterns({"/data"});
        return ScriptResolver(root.string(), probe_resolver(root_fd.get()), std::move(rules));
    }
};

struct Resolved {
    Kind kind;
    std::string script;
    std::string path_info;
    std::string file; // beneath the root: SCRIPT_FILENAME's end
};

Resolved resolve(const ScriptResolver& resolver, std::string_view path) {
    char scratch[4096];
    const ScriptTarget t = resolver.resolve(path, scratch);
    return {t.kind, std::string(t.script_name), std::string(t.path_info),
            std::string(t.script_file)};
}

} // namespace

TEST_CASE("a script runs with the rest of the path as PATH_INFO") {
    Site site;
    const ScriptResolver r = site.resolver();
    auto t = resolve(r, "/info.php");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/info.php");
    CHECK(t.path_info.empty());
    t = resolve(r, "/app.php/user/7");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/app.php");
    CHECK(t.path_info == "/user/7");
    t = resolve(r, "/app.php/");
    CHECK(t.kind == Kind::script);
    CHECK(t.path_info == "/");
}

TEST_CASE("a file that is not a script never runs, whatever follows it") {
    Site site;
    const ScriptResolver r = site.resolver(true, "/index.php");
    // The cgi.fix_pathinfo attack: x.php does not exist, a.jpg does.
    CHECK(resolve(r, "/uploads/a.jpg/x.php").kind == Kind::not_found);
    // Without a script name at the end it is not a script either.
    const auto t = resolve(r, "/uploads/a.jpg/x");
    CHECK(t.kind == Kind::script); // the front controller, not a.jpg
    CHECK(t.script == "/index.php");
    CHECK(resolve(r, "/uploads/a.jpg").kind == Kind::static_file);
}

TEST_CASE("a missing script is 404, never the front controller") {
    Site site;
    const ScriptResolver r = site.resolver(true, "/index.php");
    CHECK(resolve(r, "/missing.php").kind == Kind::not_found);
    CHECK(resolve(r, "/sub/missing.php").kind == Kind::not_found);
    const auto t = resolve(r, "/some/route");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/index.php");
    CHECK(t.path_info.empty());
}

TEST_CASE("without a fallback a missing path is 404") {
    Site site;
    const ScriptResolver r = site.resolver();
    CHECK(resolve(r, "/some/route").kind == Kind::not_found);
}

TEST_CASE("directories: the trailing slash, then the index script") {
    Site site;
    const ScriptResolver r = site.resolver();
    CHECK(resolve(r, "/sub").kind == Kind::add_slash);
    auto t = resolve(r, "/sub/");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/sub/index.php");
    t = resolve(r, "/");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/index.php");
    CHECK(resolve(r, "/plain/").kind == Kind::static_file);
    // A directory with a script's name is not a script.
    CHECK(resolve(r, "/dir.php").kind == Kind::add_slash);
}

TEST_CASE("static files, or with static off the fallback") {
    Site site;
    CHECK(resolve(site.resolver(), "/style.css").kind == Kind::static_file);
    CHECK(resolve(site.resolver(false), "/style.css").kind == Kind::not_found);
    const auto t = resolve(site.resolver(false, "/index.php"), "/style.css");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/index.php");
}

TEST_CASE("hidden files that exist and denied prefixes are forbidden") {
    Site site;
    const ScriptResolver r = site.resolver(true, "/index.php");
    CHECK(resolve(r, "/.env").kind == Kind::forbidden);
    CHECK(resolve(r, "/.env/x.php").kind == Kind::forbidden);
    CHECK(resolve(r, "/.git/config").kind == Kind::forbidden);
    CHECK(resolve(r, "/.git/missing.php").kind == Kind::forbidden);
    CHECK(resolve(r, "/data/x.php").kind == Kind::forbidden);
    CHECK(resolve(r, "/data").kind == Kind::forbidden);
    // A prefix only covers whole segments.
    CHECK(resolve(r, "/database").kind == Kind::script);
}

TEST_CASE("a script reached through a link out of the root does not run") {
    Site site;
    const ScriptResolver r = site.resolver();
    CHECK(resolve(r, "/out.php").kind == Kind::not_found);
}

TEST_CASE("a hidden segment that names nothing is a route for the front controller") {
    Site site;
    auto t = resolve(site.resolver(true, "/index.php"), "/wiki/.NET");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/index.php");
    CHECK(resolve(site.resolver(), "/wiki/.NET").kind == Kind::not_found);
    // A missing script is 404 there too, and a script before it runs.
    CHECK(resolve(site.resolver(true, "/index.php"), "/.nothing/x.php").kind == Kind::not_found);
    t = resolve(site.resolver(), "/app.php/.hidden");
    CHECK(t.kind == Kind::script);
    CHECK(t.path_info == "/.hidden");
}

TEST_CASE("the index names are tried in order, and the first that exists wins") {
    Site site;
    ScriptRules rules;
    rules.extensions = {".php"};
    rules.index = {"index.html", "index.php"};
    const ScriptResolver html_first(site.root.string(), probe_resolver(site.root_fd.get()), rules);
    CHECK(resolve(html_first, "/both/").kind == Kind::static_file);
    auto t = resolve(html_first, "/sub/"); // only index.php there
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/sub/index.php");
    rules.index = {"index.php", "index.html"};
    const ScriptResolver php_first(site.root.string(), probe_resolver(site.root_fd.get()), rules);
    t = resolve(php_first, "/both/");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/both/index.php");
    CHECK(php_first.scratch_size(6) == 6 + 10);
}

TEST_CASE("deny patterns: prefixes, names and globs, on the path and on the script") {
    Site site;
    const ScriptResolver r =
        site.with_rules({"/data", "info.php", "/sub/*.php", "*.md", "style.*"}, {});
    CHECK(resolve(r, "/info.php").kind == Kind::forbidden);
    CHECK(resolve(r, "/style.css").kind == Kind::forbidden);
    CHECK(resolve(r, "/app.php/notes.md").kind == Kind::forbidden);
    // The script an index makes of /sub/, and one before PATH_INFO.
    CHECK(resolve(r, "/sub/").kind == Kind::forbidden);
    CHECK(resolve(r, "/info.php/user/7").kind == Kind::forbidden);
    const auto t = resolve(r, "/app.php/user/7");
    CHECK(t.kind == Kind::script);
    CHECK(t.file == "/app.php");
    CHECK(resolve(r, "/").kind == Kind::script);
}

TEST_CASE("scripts: only the listed ones run, the others are 404, never the fallback") {
    Site site;
    const ScriptResolver r = site.with_rules({}, {"/{index,app}.php"}, "/index.php");
    auto t = resolve(r, "/app.php/user/7");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/app.php");
    CHECK(t.path_info == "/user/7");
    CHECK(resolve(r, "/info.php").kind == Kind::not_found);
    CHECK(resolve(r, "/info.php/x").kind == Kind::not_found);
    CHECK(resolve(r, "/data/x.php").kind == Kind::not_found);
    // The index script is checked as what it runs.
    CHECK(resolve(r, "/sub/").kind == Kind::not_found);
    t = resolve(r, "/");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/index.php");
    // What is no script still reaches the front controller.
    t = resolve(r, "/some/route");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/index.php");
    CHECK(resolve(r, "/style.css").kind == Kind::static_file);
    // A name pattern lists a script wherever it is.
    CHECK(resolve(site.with_rules({}, {"index.php"}), "/sub/").kind == Kind::script);
    CHECK(resolve(site.with_rules({}, {"index.php"}), "/app.php").kind == Kind::not_found);
}

TEST_CASE("alias: the route's prefix stands for the alias, SCRIPT_NAME stays the URL's") {
    Site site;
    const ScriptResolver r = site.with_rules({"/w/data"}, {}, "/w/index.php",
                                             PathMap({{}, "/w"}, "", site.root.string()));
    auto t = resolve(r, "/w/app.php/user/7");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/w/app.php");
    CHECK(t.file == "/app.php");
    CHECK(t.path_info == "/user/7");
    t = resolve(r, "/w/");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/w/index.php");
    CHECK(t.file == "/index.php");
    t = resolve(r, "/w/sub/");
    CHECK(t.script == "/w/sub/index.php");
    CHECK(t.file == "/sub/index.php");
    CHECK(resolve(r, "/w").kind == Kind::add_slash);
    CHECK(resolve(r, "/w/sub").kind == Kind::add_slash);
    CHECK(resolve(r, "/w/style.css").kind == Kind::static_file);
    CHECK(resolve(r, "/w/.env").kind == Kind::forbidden);
    CHECK(resolve(r, "/w/data/x.php").kind == Kind::forbidden);
    CHECK(resolve(r, "/w/out.php").kind == Kind::not_found);
    CHECK(resolve(r, "/w/missing.php").kind == Kind::not_found);
    t = resolve(r, "/w/some/route");
    CHECK(t.script == "/w/index.php");
    CHECK(t.file == "/index.php");
    // The root's own paths mean nothing under the alias.
    CHECK(resolve(r, "/app.php").kind == Kind::not_found);

    // An exact route's alias names the script.
    const ScriptResolver file = site.with_rules(
        {}, {}, {},
        PathMap({Route::Kind::exact, "/status.php"}, "", (site.root / "info.php").string()));
    t = resolve(file, "/status.php");
    CHECK(t.kind == Kind::script);
    CHECK(t.script == "/status.php");
    CHECK(t.file == "/info.php");
    // What an exact route never takes (before routes by kind, a prefix's).
    t = resolve(file, "/status.php/x");
    CHECK(t.file == "/info.php");
    CHECK(t.path_info == "/x");
}

TEST_CASE("on a loop, the last path's target is kept: views into each request's own buffers, "
          "and every change seen") {
    Site site;
    const ScriptResolver r = site.resolver(true, "/index.php");
    // The view lies in [buffer, buffer + size).
    const auto within = [](std::string_view view, const char* buffer, std::size_t size) {
        return view.data() >= buffer && view.data() + view.size() <= buffer + size;
    };
    test::EventLoop t;
    t.spawn([&] {
        // A script with PATH_INFO, an index script (built in the scratch)
        // and the front controller, each asked twice from other buffers.
        for (const char* asked : {"/app.php/user/7", "/sub/", "/some/route"}) {
            INFO(asked);
            std::string first_path = asked;
            char first_scratch[256];
            const ScriptTarget first = r.resolve(first_path, first_scratch);
            const Resolved expected{first.kind, std::string(first.script_name),
                                    std::string(first.path_info), std::string(first.script_file)};
            std::string path = asked;
            char scratch[256];
            std::memset(scratch, 'x', sizeof scratch);
            const ScriptTarget again = r.resolve(path, scratch);
            std::memset(first_scratch, 'y', sizeof first_scratch);
            first_path.assign(first_path.size(), 'z');
            CHECK(again.kind == expected.kind);
            CHECK(again.script_name == expected.script);
            CHECK(again.path_info == expected.path_info);
            CHECK(again.script_file == expected.file);
            for (const std::string_view view : {again.script_name, again.path_info})
                if (!view.empty() && view != "/index.php")
                    CHECK((within(view, path.data(), path.size()) ||
                           within(view, scratch, sizeof scratch)));
        }
        // A change: the same path resolves anew.
        const auto twice = [&](std::string_view asked) {
            const Resolved a = resolve(r, asked);
            const Resolved b = resolve(r, asked);
            CHECK(a.kind == b.kind);
            CHECK(a.script == b.script);
            return a;
        };
        CHECK(twice("/sub/").script == "/sub/index.php");
        fs::remove(site.root / "sub" / "index.php");
        CHECK(twice("/sub/").kind == Kind::static_file);
        CHECK(twice("/app.php/user/7").script == "/app.php");
        fs::remove(site.root / "app.php");
        CHECK(twice("/app.php/user/7").script == "/index.php"); // the front controller
        CHECK(twice("/app.php").kind == Kind::not_found);
        Site::write(site.root / "app.php", "<?php echo 2;");
        CHECK(twice("/app.php/user/7").script == "/app.php");
    });
    t.run();
}
