// The fastcgi handler's config part: its State from config::FastcgiHandler.

#include "handlers/fastcgi/handler.hpp"
#include "handlers/fastcgi/params.hpp"
#include "handlers/fastcgi/script_call.hpp"
#include "handlers/fastcgi/state.hpp"
#include "handlers/files/access.hpp"
#include "handlers/files/handler.hpp"

#include <algorithm>
#include <cstring>

namespace weft::handlers {

namespace {

// Issue 15's rules: `deny` and `scripts` patterns, and the alias the
// resolver maps paths through (the fallback must be beneath it).
bool path_rules(const config::FastcgiHandler& config, const PathMap& paths, ScriptRules& rules,
                std::string& error) {
    if (!compile_patterns(config.deny, true, rules.deny, error)) return false;
    if (!compile_patterns(config.scripts, false, rules.scripts, error)) return false;
    if (!rules.fallback.empty() && !paths.local(rules.fallback)) {
        error = "the fallback " + rules.fallback + " is not beneath the route the alias maps";
        return false;
    }
    rules.paths = paths;
    return true;
}

} // namespace

std::unique_ptr<http::Handler> create(const config::FastcgiHandler& config,
                                      const BuildContext& context, std::string& error) {
    using State = FastcgiHandler::State;
    auto state = std::make_unique<State>();
    state->name = "fastcgi " + config.route.path;
    state->server_name = context.site_name();
    const PathMap paths(config.route, context.root(config.root), config.alias);
    std::string root = paths.directory();
    state->description = "PHP from " + root + " via " +
                         (!config.upstream.empty() ? "upstream " + config.upstream
                          : config.pass.empty()    ? std::string("nothing")
                                                   : config.pass.front().to_string());
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    if (root.empty()) {
        error = state->name + ": no root: set one in the handler or its site";
        return nullptr;
    }
    Resolver resolver = config.follow_symlinks ? Resolver::follow : Resolver::openat2;
    if (context.open_roots) {
        const int fd = open_root(root.c_str());
        if (fd < 0) {
            error = state->name + ": cannot open the root " + root + ": " + std::strerror(-fd);
            return nullptr;
        }
        state->root_fd.reset(fd);
        if (!config.follow_symlinks) resolver = probe_resolver(fd);
    }
    state->root = root == "/" ? std::string() : root;

    ScriptRules rules;
    rules.extensions = config.extensions;
    rules.index = config.index;
    rules.static_files = config.static_files;
    rules.fallback = config.fallback.empty() ? std::string() : normalised_prefix(config.fallback);
    if (!path_rules(config, paths, rules, error)) {
        error = state->name + ": " + error;
        return nullptr;
    }
    state->scripts = std::make_unique<ScriptResolver>(root, resolver, std::move(rules));

    if (config.static_files) {
        config::FilesHandler files;
        files.route = config.route;
        files.root = config.alias.empty() ? root : std::string();
        files.alias = config.alias;
        // The static handler's index: the list's names that are no script
        // (the resolver runs the scripts), else index.html.
        files.index.clear();
        for (const std::string& name : config.index)
            if (!state->scripts->is_script_name(name)) files.index.push_back(name);
        if (files.index.empty()) files.index.push_back("index.html");
        files.deny = config.deny;
        files.follow_symlinks = config.follow_symlinks;
        files.precompressed = config.precompressed;
        state->files = create(files, context, error);
        if (!state->files) return nullptr;
    }
    state->upstream = context.upstream(config.upstream);
    if (!state->upstream) {
        // Its own pool, kept across reloads as long as the handler stays
        // where it is and passes to the same servers.
        config::Upstream own;
        own.name = "pass of " + std::string(context.site_name()) +
                   (config.route.kind == config::Route::Kind::exact ? " exact " : " ") +
                   config.route.path;
        own.servers = config.pass;
        state->upstream = context.pool(upstream_options(own));
    }
    state->extra_params = extra_params(config.params);
    state->request_buffering = config.request_buffering;
    state->buffers = static_cast<std::size_t>(
        std::clamp<std::uint64_t>(config.buffers, ScriptCall::kMinRead, std::uint64_t{1} << 30));
    state->max_temp_file_size = config.max_temp_file_size;
    std::optional<http::Route> route = handlers::route(config.route, error);
    if (!route) return nullptr;
    return std::make_unique<FastcgiHandler>(std::move(state), std::move(*route));
}

} // namespace weft::handlers
