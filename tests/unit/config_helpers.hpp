#pragma once
// Loading a configuration from text in a test: what loads, or the error
// ("test.conf:LINE:COLUMN: message") of what does not. No environment
// variable is set.

#include "config/parser.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace test {

inline const weft::config::Environment kNoEnv = [](std::string_view) -> std::optional<std::string> {
    return std::nullopt;
};

inline weft::config::Config load(std::string_view text) {
    weft::config::ConfigError error;
    auto config = weft::config::load_text(text, "test.conf", kNoEnv, error);
    INFO(error.text());
    REQUIRE(config);
    return *config;
}

inline std::string failure(std::string_view text) {
    weft::config::ConfigError error;
    REQUIRE_FALSE(weft::config::load_text(text, "test.conf", kNoEnv, error));
    return error.text();
}

} // namespace test
