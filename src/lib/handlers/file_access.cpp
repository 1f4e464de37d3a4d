#include "handlers/file_access.hpp"

#include "http/request.hpp"

#include <cstring>

namespace weft::handlers {

namespace {

constexpr std::string_view kWellKnown = "/.well-known";

} // namespace

std::size_t dot_segment_end(std::string_view path) {
    // From dot to dot: a path holds few, often one (the extension's).
    const char* const begin = path.data();
    const char* const end = begin + path.size();
    const char* p = begin;
    if (path.starts_with(kWellKnown) &&
        (path.size() == kWellKnown.size() || path[kWellKnown.size()] == '/'))
        p += kWellKnown.size();
    for (; p < end; ++p) {
        p = static_cast<const char*>(std::memchr(p, '.', static_cast<std::size_t>(end - p)));
        if (!p) return std::string_view::npos;
        if (p == begin || p[-1] == '/') {
            const void* slash = std::memchr(p, '/', static_cast<std::size_t>(end - p));
            return slash ? static_cast<std::size_t>(static_cast<const char*>(slash) - begin)
                         : path.size();
        }
    }
    return std::string_view::npos;
}

bool is_never_served(std::string_view name) {
    // Backups and leftovers, then a script's source (any case: a file
    // system may not care, and the backend's extensions need not be these).
    static constexpr std::string_view kExtensions[] = {
        ".bak", ".orig",  ".save", ".swp",  ".swo",  ".rej", //
        ".php", ".phtml", ".phar", ".phps", ".php3", ".php4", ".php5", ".php6", ".php7", ".php8"};
    if (const std::size_t slash = name.rfind('/'); slash != std::string_view::npos)
        name.remove_prefix(slash + 1);
    if (name.empty()) return false;
    if (name.back() == '~' || (name.size() > 1 && name.front() == '#' && name.back() == '#'))
        return true;
    const std::size_t dot = name.rfind('.');
    if (dot == std::string_view::npos || dot == 0) return false;
    const std::string_view extension = name.substr(dot);
    for (std::string_view e : kExtensions)
        if (http::equals_ignoring_case(extension, e)) return true;
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
