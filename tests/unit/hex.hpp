#pragma once
// Bytes as lower-case hex, as digests are written in RFCs.

#include <cstdint>
#include <cstdio>
#include <string>

namespace test {

template <class Bytes>
std::string hex(const Bytes& bytes) {
    std::string out;
    char two[3];
    for (const std::uint8_t byte : bytes) {
        std::snprintf(two, sizeof two, "%02x", byte);
        out += two;
    }
    return out;
}

} // namespace test
