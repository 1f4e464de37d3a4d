#pragma once
// Unaligned loads of 2, 4 and 8 bytes as one number (host order): the
// memcpy compiles to one move, where a byte loop would not.

#include <cstdint>
#include <cstring>

namespace weft::words {

inline std::uint16_t load16(const char* p) {
    std::uint16_t word;
    std::memcpy(&word, p, sizeof word);
    return word;
}

inline std::uint32_t load32(const char* p) {
    std::uint32_t word;
    std::memcpy(&word, p, sizeof word);
    return word;
}

inline std::uint64_t load64(const char* p) {
    std::uint64_t word;
    std::memcpy(&word, p, sizeof word);
    return word;
}

} // namespace weft::words
