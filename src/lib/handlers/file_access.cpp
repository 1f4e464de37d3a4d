#include "handlers/file_access.hpp"

#include <cstring>

namespace weft::handlers {

bool has_dot_segment(std::string_view path) {
    // From dot to dot: a path holds few, often one (the extension's).
    const char* const begin = path.data();
    const char* const end = begin + path.size();
    for (const char* p = begin; p < end; ++p) {
        p = static_cast<const char*>(std::memchr(p, '.', static_cast<std::size_t>(end - p)));
        if (!p) return false;
        if (p == begin || p[-1] == '/') return true;
    }
    return false;
}

bool is_beneath(std::string_view path, std::string_view prefix) {
    if (!path.starts_with(prefix)) return false;
    return path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/';
}

std::string normalised_prefix(std::string prefix) {
    if (prefix.empty() || prefix.front() != '/') prefix.insert(prefix.begin(), '/');
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    return prefix;
}

} // namespace weft::handlers
