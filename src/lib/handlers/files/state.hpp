#pragma once
// What a files handler resolved from its configuration at create(): read by
// each request, shared by every loop, never changed.

#include "handlers/files/access.hpp"
#include "handlers/files/handler.hpp"
#include "handlers/files/open.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weft::handlers {

struct FilesHandler::State {
    OwnedFd root;          // checked at create(); each loop opens its own
    std::string root_path; // what each loop opens
    Resolver resolver = Resolver::openat2;
    std::vector<std::string> index; // tried in order; empty: none
    bool listing = false;
    bool precompressed = false;
    std::vector<std::string> deny; // normalised prefixes
    // Identifies the handler to the per-thread caches, which outlive it.
    std::uint64_t id = 0;
    std::shared_ptr<const bool> alive = std::make_shared<const bool>(true);

    bool denies(std::string_view path) const {
        return std::any_of(deny.begin(), deny.end(),
                           [&](const std::string& prefix) { return is_beneath(path, prefix); });
    }
};

} // namespace weft::handlers
