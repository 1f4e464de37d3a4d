#include "http/request.hpp"
#include "util/ascii.hpp"

namespace weft::http {

std::string_view Request::header(std::string_view name) const {
    for (std::size_t i = 0; i < header_count; ++i)
        if (ascii::equals_ignoring_case(headers[i].name, name)) return headers[i].value;
    return {};
}

} // namespace weft::http
