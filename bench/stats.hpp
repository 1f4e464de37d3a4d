#pragma once
// What the benchmarks share: the median of their runs, and reading counts
// from their command lines.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace bench {

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// A positive whole number given to `flag`; exits 2 (bad usage) otherwise.
inline long positive(const char* text, const char* flag) {
    char* end = nullptr;
    const long n = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || n <= 0) {
        std::fprintf(stderr, "%s wants a positive number, not '%s'\n", flag, text);
        std::exit(2);
    }
    return n;
}

} // namespace bench
