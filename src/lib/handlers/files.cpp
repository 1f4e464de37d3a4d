// A first cut, replaced by the full handler (ranges, caching, listing...).
#include "handlers/files.hpp"

#include "http/exchange.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace weft::handlers {

struct FilesHandler::State {
    int root = -1;
    std::string index;
    ~State() {
        if (root >= 0) ::close(root);
    }
};

FilesHandler::FilesHandler(std::unique_ptr<State> state, std::string prefix)
    : Handler(std::move(prefix)), state_(std::move(state)) {}

FilesHandler::~FilesHandler() = default;

std::unique_ptr<FilesHandler> FilesHandler::create(const config::FilesHandler& config,
                                                   std::string_view site_root, std::string& error) {
    auto state = std::make_unique<State>();
    const std::string root = config.root.empty() ? std::string(site_root) : config.root;
    state->root = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (state->root < 0) {
        error =
            "files " + config.prefix + ": cannot open root " + root + ": " + std::strerror(errno);
        return nullptr;
    }
    state->index = config.index;
    return std::unique_ptr<FilesHandler>(new FilesHandler(std::move(state), config.prefix));
}

void FilesHandler::serve(http::Exchange& exchange) const {
    std::string relative(exchange.path().substr(1));
    if (relative.empty() || relative.back() == '/') relative += state_->index;
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const int fd =
        static_cast<int>(::syscall(SYS_openat2, state_->root, relative.c_str(), &how, sizeof how));
    if (fd < 0) {
        exchange.send_error(404);
        return;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        exchange.send_error(404);
        return;
    }
    exchange.send_file(fd, 0, static_cast<std::uint64_t>(st.st_size));
    ::close(fd);
}

} // namespace weft::handlers
