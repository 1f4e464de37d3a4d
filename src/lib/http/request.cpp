#include "http/request.hpp"

namespace weft::http {

namespace {
constexpr char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}
} // namespace

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

std::string_view Request::header(std::string_view name) const {
    for (std::size_t i = 0; i < header_count; ++i)
        if (equals_ignoring_case(headers[i].name, name)) return headers[i].value;
    return {};
}

} // namespace weft::http
