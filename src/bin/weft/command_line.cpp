#include "command_line.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>

namespace weft {

const char* const kUsage =
    "usage: weft [-c FILE] [-t]\n"
    "       weft --listen ADDR --root DIR [--php ADDR]\n"
    "       weft --help | --version\n"
    "\n"
    "  (no arguments)   serve the current directory on 127.0.0.1:8080\n"
    "  -c FILE          run the configuration in FILE\n"
    "  -t               check the configuration (FILE, or the default) and exit\n"
    "  --listen ADDR    serve on ADDR: 127.0.0.1:8080, *:80, [::1]:8080, unix:/path\n"
    "  --root DIR       serve the files under DIR\n"
    "  --php ADDR       pass .php files to PHP-FPM at ADDR (unix:/path or host:port)\n"
    "  --help           print this help\n"
    "  --version        print the version\n";

std::optional<CommandLine> parse_command_line(const std::vector<std::string>& args,
                                              std::string& error) {
    CommandLine line;
    bool check = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        auto value = [&](std::string& out) {
            if (i + 1 >= args.size() || args[i + 1].empty()) {
                error = arg + " needs a value";
                return false;
            }
            if (!out.empty()) {
                error = arg + " is given twice";
                return false;
            }
            out = args[++i];
            return true;
        };
        if (arg == "--help" || arg == "-h" || arg == "--version" || arg == "-v") {
            CommandLine only;
            only.action = arg == "--help" || arg == "-h" ? CommandLine::Action::help
                                                         : CommandLine::Action::version;
            return only;
        }
        if (arg == "-t") {
            check = true;
        } else if (arg == "-c") {
            if (!value(line.config_file)) return std::nullopt;
        } else if (arg == "--listen") {
            if (!value(line.listen)) return std::nullopt;
        } else if (arg == "--root") {
            if (!value(line.root)) return std::nullopt;
        } else if (arg == "--php") {
            if (!value(line.php)) return std::nullopt;
        } else {
            error = "unknown option '" + arg + "'";
            return std::nullopt;
        }
    }
    if (!line.config_file.empty() &&
        (!line.listen.empty() || !line.root.empty() || !line.php.empty())) {
        error = "-c and --listen/--root/--php do not go together: the file says it all";
        return std::nullopt;
    }
    if (check) line.action = CommandLine::Action::check;
    return line;
}

std::optional<config::Config> config_without_file(const CommandLine& line, std::string& error,
                                                  bool& usage) {
    config::Config c;
    usage = true;
    if (!line.listen.empty()) {
        auto address = Address::parse(line.listen, error);
        if (!address) {
            error = "--listen: " + error;
            return std::nullopt;
        }
        c.listeners.push_back(*address);
    } else {
        c.listeners.push_back(*Address::parse("127.0.0.1:8080", error));
    }
    std::vector<Address> php;
    if (!line.php.empty()) {
        auto address = Address::parse(line.php, error);
        if (!address) {
            error = "--php: " + error;
            return std::nullopt;
        }
        php.push_back(*address);
    }
    usage = false;
    std::string root = line.root;
    if (root.empty()) {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            error = "cannot tell the current directory";
            return std::nullopt;
        }
        root = cwd;
    }
    struct stat st {};
    if (stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        error = "--root " + root + " is not a directory";
        return std::nullopt;
    }
    char resolved[PATH_MAX];
    if (realpath(root.c_str(), resolved)) root = resolved;

    config::Site site;
    site.root = root;
    if (php.empty()) {
        config::FilesHandler files;
        files.route.path = "/";
        site.handlers.emplace_back(std::move(files));
    } else {
        config::FastcgiHandler fastcgi;
        fastcgi.route.path = "/";
        fastcgi.pass = std::move(php);
        site.handlers.emplace_back(std::move(fastcgi));
    }
    c.sites.push_back(std::move(site));
    return c;
}

} // namespace weft
