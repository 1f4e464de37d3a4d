#include "handlers/files/encoding.hpp"

#include "http/request.hpp"
#include "util/ascii.hpp"

namespace weft::handlers {
namespace {

using ascii::is_whitespace;
constexpr auto trim = ascii::trim_whitespace;

// The weight an element's parameters give it: its q, or 1000 without one.
int weight(std::string_view parameters) {
    int q = 1000;
    while (!parameters.empty()) {
        const std::size_t semicolon = parameters.find(';');
        const std::string_view parameter = trim(parameters.substr(0, semicolon));
        parameters = semicolon == std::string_view::npos ? std::string_view{}
                                                         : parameters.substr(semicolon + 1);
        const std::size_t equals = parameter.find('=');
        if (equals == std::string_view::npos) continue;
        if (ascii::equals_ignoring_case(trim(parameter.substr(0, equals)), "q"))
            q = qvalue(trim(parameter.substr(equals + 1)));
    }
    return q;
}

} // namespace

int qvalue(std::string_view s) {
    if (s.empty() || (s[0] != '0' && s[0] != '1')) return -1;
    int value = (s[0] - '0') * 1000;
    if (s.size() == 1) return value;
    if (s[1] != '.' || s.size() > 5) return -1;
    int scale = 100;
    for (const char c : s.substr(2)) {
        if (c < '0' || c > '9') return -1;
        value += (c - '0') * scale;
        scale /= 10;
    }
    return value <= 1000 ? value : -1;
}

std::string_view twin_suffix(Encoding encoding) {
    switch (encoding) {
    case Encoding::gzip:
        return ".gz";
    case Encoding::br:
        return ".br";
    case Encoding::identity:
        break;
    }
    return {};
}

std::string_view content_coding(Encoding encoding) {
    switch (encoding) {
    case Encoding::gzip:
        return "gzip";
    case Encoding::br:
        return "br";
    case Encoding::identity:
        break;
    }
    return {};
}

TwinOrder twin_order(std::string_view field) {
    int br = -1, gzip = -1, any = -1; // -1: not mentioned
    while (!field.empty()) {
        const std::size_t comma = field.find(',');
        const std::string_view element = field.substr(0, comma);
        field = comma == std::string_view::npos ? std::string_view{} : field.substr(comma + 1);
        const std::size_t semicolon = element.find(';');
        const std::string_view coding = trim(element.substr(0, semicolon));
        const int q =
            semicolon == std::string_view::npos ? 1000 : weight(element.substr(semicolon + 1));
        if (q < 0) continue;
        if (ascii::equals_ignoring_case(coding, "br"))
            br = q;
        else if (ascii::equals_ignoring_case(coding, "gzip") ||
                 ascii::equals_ignoring_case(coding, "x-gzip"))
            gzip = q;
        else if (coding == "*")
            any = q;
    }
    if (br < 0) br = any;
    if (gzip < 0) gzip = any;
    TwinOrder order;
    if (br > 0 && br >= gzip) order.twins[order.count++] = Encoding::br;
    if (gzip > 0) order.twins[order.count++] = Encoding::gzip;
    if (br > 0 && br < gzip) order.twins[order.count++] = Encoding::br;
    return order;
}

} // namespace weft::handlers
