#include "handlers/files/ranges.hpp"

#include "http/request.hpp"
#include "util/ascii.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <random>

namespace weft::handlers {
namespace {

constexpr std::uint64_t kNoNumber = ~std::uint64_t{0};

using ascii::is_whitespace;
constexpr auto trim = ascii::trim_whitespace;

// Decimal digits, saturating at kNoNumber - 1 (a position past any file);
// kNoNumber when `s` is empty or holds anything else.
std::uint64_t number(std::string_view s) {
    if (s.empty()) return kNoNumber;
    std::uint64_t value = 0;
    for (const char c : s) {
        if (c < '0' || c > '9') return kNoNumber;
        const std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
        value = value > (kNoNumber - 1 - digit) / 10 ? kNoNumber - 1 : value * 10 + digit;
    }
    return value;
}

bool starts_with_bytes_unit(std::string_view field) {
    static constexpr std::string_view kUnit = "bytes=";
    if (field.size() < kUnit.size()) return false;
    for (std::size_t i = 0; i + 1 < kUnit.size(); ++i)
        if ((field[i] | 0x20) != kUnit[i]) return false;
    return field[kUnit.size() - 1] == '=';
}

enum class Spec : std::uint8_t { malformed, unsatisfiable, range };

// One range-spec: "a-b", "a-" or "-n", resolved against `size` (> 0).
Spec resolve(std::string_view spec, std::uint64_t size, ByteRange& out) {
    const std::size_t dash = spec.find('-');
    if (dash == std::string_view::npos) return Spec::malformed;
    const std::string_view first = spec.substr(0, dash);
    const std::string_view last = spec.substr(dash + 1);
    if (first.empty()) { // the last n bytes
        const std::uint64_t n = number(last);
        if (n == kNoNumber) return Spec::malformed;
        if (n == 0) return Spec::unsatisfiable;
        out = {n >= size ? 0 : size - n, size - 1};
        return Spec::range;
    }
    const std::uint64_t a = number(first);
    const std::uint64_t b = last.empty() ? kNoNumber - 1 : number(last);
    if (a == kNoNumber || b == kNoNumber || b < a) return Spec::malformed;
    if (a >= size) return Spec::unsatisfiable;
    out = {a, std::min(b, size - 1)};
    return Spec::range;
}

bool overlapping(const ByteRange* ranges, std::size_t count) {
    ByteRange sorted[kMaxRanges];
    std::copy(ranges, ranges + count, sorted);
    std::sort(sorted, sorted + count, [](auto& x, auto& y) { return x.first < y.first; });
    for (std::size_t i = 1; i < count; ++i)
        if (sorted[i].first <= sorted[i - 1].last) return true;
    return false;
}

char* append(char* out, std::string_view s) {
    std::memcpy(out, s.data(), s.size());
    return out + s.size();
}

char* append(char* out, std::uint64_t n) {
    return std::to_chars(out, out + 20, n).ptr;
}

} // namespace

RangeRequest parse_ranges(std::string_view field, std::uint64_t size) {
    RangeRequest request;
    field = trim(field);
    if (size == 0 || !starts_with_bytes_unit(field)) return request;
    std::string_view rest = field.substr(6);
    std::size_t specs = 0;
    std::uint8_t count = 0;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view spec = trim(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        if (spec.empty()) continue; // a list may hold empty elements (RFC 9110 §5.6.1)
        if (++specs > kMaxRanges) return request;
        ByteRange range;
        switch (resolve(spec, size, range)) {
        case Spec::malformed:
            return request;
        case Spec::unsatisfiable:
            break;
        case Spec::range:
            request.ranges[count++] = range;
            break;
        }
    }
    if (specs == 0) return request;
    if (count == 0) {
        request.kind = RangeRequest::Kind::unsatisfiable;
        return request;
    }
    if (count > 1 && overlapping(request.ranges, count)) return request;
    request.kind = RangeRequest::Kind::partial;
    request.count = count;
    return request;
}

std::size_t format_content_range(ByteRange range, std::uint64_t size, char* out) {
    char* p = append(out, range.first);
    *p++ = '-';
    p = append(p, range.last);
    *p++ = '/';
    p = append(p, size);
    return static_cast<std::size_t>(p - out);
}

std::size_t Multipart::part_head(ByteRange range, char* out, std::size_t capacity) const {
    static constexpr std::string_view kFixed = "\r\n--\r\nContent-Type: \r\nContent-Range: bytes "
                                               "\r\n\r\n";
    if (kFixed.size() + boundary.size() + content_type.size() + kContentRangeCapacity > capacity)
        return 0;
    char* p = append(out, "\r\n--");
    p = append(p, boundary);
    p = append(p, "\r\nContent-Type: ");
    p = append(p, content_type);
    p = append(p, "\r\nContent-Range: bytes ");
    p += format_content_range(range, size, p);
    p = append(p, "\r\n\r\n");
    return static_cast<std::size_t>(p - out);
}

std::string_view Multipart::tail(char* out, std::size_t capacity) const {
    if (boundary.size() + 8 > capacity) return {};
    char* p = append(out, "\r\n--");
    p = append(p, boundary);
    p = append(p, "--\r\n");
    return {out, static_cast<std::size_t>(p - out)};
}

std::uint64_t Multipart::body_length(const ByteRange* ranges, std::size_t count) const {
    char buffer[512];
    std::uint64_t length = tail(buffer, sizeof buffer).size();
    for (std::size_t i = 0; i < count; ++i)
        length += part_head(ranges[i], buffer, sizeof buffer) + ranges[i].length();
    return length;
}

void make_boundary(char* out) {
    // Per thread: seeded once from the system's entropy, then a cheap
    // generator; a boundary needs to be unpredictable by content, not secret.
    thread_local std::mt19937_64 generator{std::random_device{}()};
    static constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    std::uint64_t bits[2] = {generator(), generator()};
    for (std::size_t i = 0; i < kBoundaryLength; ++i) {
        std::uint64_t& word = bits[i / 10];
        out[i] = kDigits[word % 36];
        word /= 36;
    }
}

} // namespace weft::handlers
