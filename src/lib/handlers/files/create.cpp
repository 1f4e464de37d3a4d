// The files handler's config part: its settings from config::FilesHandler.

#include "handlers/files/handler.hpp"
#include "handlers/files/state.hpp"

#include <atomic>
#include <cstring>

namespace weft::handlers {

namespace {

std::atomic<std::uint64_t> next_handler_id{1};

} // namespace

std::unique_ptr<http::Handler> create(const config::FilesHandler& config,
                                      const BuildContext& context, std::string& error) {
    auto state = std::make_unique<FilesHandler::State>(
        PathMap(config.route, context.root(config.root), config.alias));
    const std::string& root = state->root_path;
    const std::string name = "files " + config.route.path + ": ";
    if (root.empty()) {
        error = name + "no root: set one in the handler or its site";
        return nullptr;
    }
    if (context.open_roots) {
        const int fd = open_root(root.c_str());
        if (fd < 0) {
            error = name + "cannot open the " +
                    (config.alias.empty() ? "root " : "alias's directory ") + root + ": " +
                    std::strerror(-fd);
            return nullptr;
        }
        state->root.reset(fd);
        state->resolver = config.follow_symlinks ? Resolver::follow : probe_resolver(fd);
    }
    state->index = config.index;
    state->listing = config.listing;
    state->precompressed = config.precompressed;
    if (!compile_patterns(config.deny, true, state->deny, error)) {
        error = name + "deny: " + error;
        return nullptr;
    }
    state->id = next_handler_id.fetch_add(1, std::memory_order_relaxed);
    std::optional<http::Route> route = handlers::route(config.route, error);
    if (!route) return nullptr;
    return std::make_unique<FilesHandler>(std::move(state), std::move(*route));
}

} // namespace weft::handlers
