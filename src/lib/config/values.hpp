#pragma once
// The typed values of the configuration language:
//   durations  250ms 15s 2m 1h, a bare number is seconds
//   sizes      512 16K 1M 1G (powers of 1024; k, m, g too)
//   booleans   on off true false yes no
//   lists      items separated by spaces or tabs
// Addresses are util/address.hpp. Each parser gives the value, or nullopt
// with a one-line message that says what was expected; the config parser
// puts file:line:column in front.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::config {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text, std::string& error);
std::optional<std::uint64_t> parse_size(std::string_view text, std::string& error);
std::optional<bool> parse_bool(std::string_view text, std::string& error);
// The items of a list, in order; views into `text`.
std::vector<std::string_view> split_list(std::string_view text);

} // namespace weft::config
