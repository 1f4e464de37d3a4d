#include "handlers/file_access.hpp"

namespace weft::handlers {

bool has_dot_segment(std::string_view path) {
    for (std::size_t i = 0; i + 1 < path.size(); ++i)
        if (path[i] == '/' && path[i + 1] == '.') return true;
    return !path.empty() && path.front() == '.';
}

bool is_beneath(std::string_view path, std::string_view prefix) {
    if (!path.starts_with(prefix)) return false;
    return path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/';
}

} // namespace weft::handlers
