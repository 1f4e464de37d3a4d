#include "handlers/files/conditions.hpp"

#include "http/date.hpp"
#include "util/ascii.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>

namespace weft::handlers {
namespace {

char* append_hex(char* out, std::uint64_t n) {
    return std::to_chars(out, out + 16, n, 16).ptr;
}

using ascii::is_whitespace;

// Whether the field name `name` is `lower` (lower-case letters and '-', of
// the same length) in any case. Field names are tokens, and setting bit 5
// turns no token character but an upper-case letter into a lower-case
// letter or '-', so one OR per word compares exactly.
bool name_is(std::string_view name, std::string_view lower) {
    constexpr std::uint64_t kCase = 0x2020202020202020u;
    const std::size_t n = lower.size();
    if (n < 8) {
        for (std::size_t i = 0; i < n; ++i)
            if ((name[i] | 0x20) != lower[i]) return false;
        return true;
    }
    // Whole words, the last one overlapping the one before it.
    for (std::size_t i = 0;; i += 8) {
        if (i + 8 > n) i = n - 8;
        std::uint64_t a, b;
        std::memcpy(&a, name.data() + i, 8);
        std::memcpy(&b, lower.data() + i, 8);
        if ((a | kCase) != b) return false;
        if (i + 8 == n) return true;
    }
}

} // namespace

std::size_t format_etag(const struct stat& st, char* out) {
    const std::uint64_t mtime_ns = static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000u +
                                   static_cast<std::uint64_t>(st.st_mtim.tv_nsec);
    char* p = out;
    *p++ = '"';
    p = append_hex(p, static_cast<std::uint64_t>(st.st_ino));
    *p++ = '-';
    p = append_hex(p, static_cast<std::uint64_t>(st.st_size));
    *p++ = '-';
    p = append_hex(p, mtime_ns);
    *p++ = '-';
    p = append_hex(p, static_cast<std::uint64_t>(st.st_ctim.tv_sec) * 1000000000u +
                          static_cast<std::uint64_t>(st.st_ctim.tv_nsec));
    *p++ = '"';
    return static_cast<std::size_t>(p - out);
}

ConditionFields::ConditionFields(const http::Request& request) : request_(request) {
    // By length first: most fields of a request are none of these, and are
    // passed over with one comparison.
    for (std::size_t i = 0; i < request.header_count; ++i) {
        const std::string_view name = request.headers[i].name;
        Field field = kFields;
        switch (name.size()) {
        case 5:
            if (name_is(name, "range")) field = range_field;
            break;
        case 8:
            if (name_is(name, "if-match"))
                field = if_match_field;
            else if (name_is(name, "if-range"))
                field = if_range_field;
            break;
        case 13:
            if (name_is(name, "if-none-match")) field = if_none_match_field;
            break;
        case 15:
            if (name_is(name, "accept-encoding")) field = accept_encoding_field;
            break;
        case 17:
            if (name_is(name, "if-modified-since")) field = if_modified_since_field;
            break;
        case 19:
            if (name_is(name, "if-unmodified-since")) field = if_unmodified_since_field;
            break;
        default:
            break;
        }
        if (field == kFields) continue;
        // The first of a repeated field counts, as with Request::header(),
        // unless it is empty.
        if (!at_[field] || value(field).empty()) at_[field] = static_cast<std::uint8_t>(i + 1);
        if (field != accept_encoding_field) conditional_ = true;
    }
}

Conditions ConditionFields::conditions() const {
    return {value(if_match_field),          value(if_none_match_field),
            value(if_modified_since_field), value(if_unmodified_since_field),
            value(if_range_field),          value(range_field),
            value(accept_encoding_field)};
}

bool etag_matches(std::string_view list, std::string_view etag, Comparison comparison) {
    std::size_t i = 0;
    while (i < list.size()) {
        while (i < list.size() && (is_whitespace(list[i]) || list[i] == ',')) ++i;
        if (i == list.size()) break;
        if (list[i] == '*') return true;
        bool weak = false;
        if (list.compare(i, 2, "W/") == 0) {
            weak = true;
            i += 2;
        }
        if (i < list.size() && list[i] == '"') {
            // An opaque-tag is DQUOTE *etagc DQUOTE, and etagc excludes '"'.
            const std::size_t close = list.find('"', i + 1);
            if (close == std::string_view::npos) return false;
            const std::string_view tag = list.substr(i, close + 1 - i);
            if (tag == etag && (comparison == Comparison::weak || !weak)) return true;
            i = close + 1;
        }
        // Whatever follows up to the next comma is not a tag: skip it.
        while (i < list.size() && list[i] != ',') ++i;
    }
    return false;
}

Verdict evaluate(const Conditions& c, std::string_view etag, std::time_t modified) {
    if (!c.if_match.empty()) {
        if (!etag_matches(c.if_match, etag, Comparison::strong))
            return Verdict::precondition_failed;
    } else if (!c.if_unmodified_since.empty()) {
        const auto date = http::parse_http_date(c.if_unmodified_since);
        if (date && modified > *date) return Verdict::precondition_failed;
    }
    if (!c.if_none_match.empty()) {
        if (etag_matches(c.if_none_match, etag, Comparison::weak)) return Verdict::not_modified;
    } else if (!c.if_modified_since.empty()) {
        const auto date = http::parse_http_date(c.if_modified_since);
        if (date && modified <= *date) return Verdict::not_modified;
    }
    return Verdict::proceed;
}

bool range_allowed(std::string_view if_range, std::string_view etag, std::time_t modified) {
    if (if_range.empty()) return true;
    if (if_range.front() == '"' || if_range.starts_with("W/"))
        return if_range == etag; // strong: a W/ tag never equals ours
    const auto date = http::parse_http_date(if_range);
    return date && *date == modified;
}

} // namespace weft::handlers
