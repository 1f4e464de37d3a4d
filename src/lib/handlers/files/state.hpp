#pragma once
// What a files handler resolved from its configuration at create(): read by
// each request, shared by every loop, never changed.

#include "handlers/files/access.hpp"
#include "handlers/files/handler.hpp"
#include "handlers/files/open.hpp"
#include "handlers/files/path_map.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weft::handlers {

struct FilesHandler::State {
    OwnedFd root;          // checked at create(); each loop opens its own
    std::string root_path; // what each loop opens: the root, or the alias
    PathMap paths;         // a request's path to one beneath root_path
    Resolver resolver = Resolver::openat2;
    std::vector<std::string> index; // tried in order; empty: none
    bool listing = false;
    bool precompressed = false;
    PathPatterns deny; // matched against the URL path
    // Identifies the handler to the per-thread caches, which outlive it.
    std::uint64_t id = 0;
    std::shared_ptr<const bool> alive = std::make_shared<const bool>(true);

    explicit State(PathMap map) : root_path(map.directory()), paths(std::move(map)) {}
    bool denies(std::string_view url_path) const { return is_denied(deny, url_path); }
};

} // namespace weft::handlers
