#include "http/websocket/handshake.hpp"

#include "util/base64.hpp"
#include "util/sha1.hpp"

namespace weft::http::websocket {

namespace {

bool is_base64_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

bool is_space(char c) {
    return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

// Whether a comma-separated list names `name`.
bool lists(std::string_view list, std::string_view name) {
    while (!list.empty()) {
        const std::size_t comma = list.find(',');
        if (trim(list.substr(0, comma)) == name) return true;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

} // namespace

bool valid_key(std::string_view key) {
    if (key.size() != 24 || key.substr(22) != "==") return false;
    for (std::size_t i = 0; i < 22; ++i)
        if (!is_base64_char(key[i])) return false;
    const char last = key[21];
    return last == 'A' || last == 'Q' || last == 'g' || last == 'w';
}

AcceptValue accept_value(std::string_view key) {
    Sha1 sha;
    sha.update(key);
    sha.update("258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    const Sha1::Digest digest = sha.finish();
    AcceptValue value;
    static_assert(base64::encoded_size(sizeof digest) == sizeof value);
    base64::encode({reinterpret_cast<const char*>(digest.data()), digest.size()}, value.data());
    return value;
}

std::string_view select_subprotocol(std::span<const std::string_view> offered,
                                    std::span<const std::string> configured) {
    for (const std::string& name : configured) {
        if (name.empty()) continue;
        for (std::string_view list : offered)
            if (lists(list, name)) return name;
    }
    return {};
}

} // namespace weft::http::websocket
