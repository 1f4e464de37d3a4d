#include "handlers/status/format.hpp"

#include "handlers/files/encoding.hpp"
#include "util/ascii.hpp"

namespace weft::handlers::status {

namespace {

constexpr auto trim = ascii::trim_whitespace;

// The first piece of `text` up to `separator`, which is taken off `text`.
std::string_view next_piece(std::string_view& text, char separator) {
    const std::size_t at = text.find(separator);
    const std::string_view piece = text.substr(0, at);
    text = at == std::string_view::npos ? std::string_view{} : text.substr(at + 1);
    return piece;
}

// One element of Accept: its media range and parameters.
struct MediaRange {
    std::string_view type, subtype;
    int q = 1000;
    bool exposition = false; // version=0.0.4 (Prometheus's text format)
};

std::optional<MediaRange> media_range(std::string_view element) {
    MediaRange range;
    const std::string_view media = trim(next_piece(element, ';'));
    const std::size_t slash = media.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    range.type = trim(media.substr(0, slash));
    range.subtype = trim(media.substr(slash + 1));
    if (range.type.empty() || range.subtype.empty()) return std::nullopt;
    while (!element.empty()) {
        const std::string_view parameter = next_piece(element, ';');
        const std::size_t equals = parameter.find('=');
        if (equals == std::string_view::npos) continue;
        const std::string_view name = trim(parameter.substr(0, equals));
        std::string_view value = trim(parameter.substr(equals + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
            value = value.substr(1, value.size() - 2);
        if (ascii::equals_ignoring_case(name, "q")) {
            range.q = qvalue(value);
            if (range.q < 0) return std::nullopt;
        } else if (ascii::equals_ignoring_case(name, "version")) {
            range.exposition = value == "0.0.4";
        }
    }
    return range;
}

// How specifically `range` names `format`: 0 not at all, 1 by */*, 2 by
// type/*, 3 by its type, 4 by its type and parameter.
int specificity(const MediaRange& range, Format format) {
    const bool any_type = range.type == "*";
    const bool any_subtype = range.subtype == "*";
    if (any_type) return any_subtype ? 1 : 0;
    std::string_view type = "text", subtype = "plain";
    switch (format) {
    case Format::html:
        subtype = "html";
        break;
    case Format::json:
        type = "application";
        subtype = "json";
        break;
    case Format::text:
    case Format::prometheus:
        break;
    }
    if (!ascii::equals_ignoring_case(range.type, type)) return 0;
    if (any_subtype) return 2;
    if (!ascii::equals_ignoring_case(range.subtype, subtype)) return 0;
    if (format == Format::prometheus) return range.exposition ? 4 : 0;
    if (format == Format::text) return range.exposition ? 0 : 3;
    return 3;
}

} // namespace

std::optional<Format> format_named(std::string_view name) {
    for (const Format f : {Format::text, Format::json, Format::prometheus, Format::html})
        if (ascii::equals_ignoring_case(name, format_name(f))) return f;
    return std::nullopt;
}

std::string_view format_name(Format format) {
    switch (format) {
    case Format::json:
        return "json";
    case Format::prometheus:
        return "prometheus";
    case Format::html:
        return "html";
    case Format::text:
        break;
    }
    return "text";
}

std::optional<std::string_view> query_format(std::string_view query) {
    while (!query.empty()) {
        const std::string_view parameter = next_piece(query, '&');
        if (parameter.starts_with("format=")) return parameter.substr(7);
    }
    return std::nullopt;
}

Format accepted_format(std::string_view accept, Format fallback) {
    constexpr Format kOrder[] = {Format::html, Format::json, Format::prometheus, Format::text};
    int best_q = 0, best_specificity = 0;
    Format best = fallback;
    for (const Format format : kOrder) {
        // The most specific range naming it gives its q (RFC 9110 §12.5.1).
        int specific = 0, q = 0;
        std::string_view field = accept;
        while (!field.empty()) {
            const std::optional<MediaRange> range = media_range(next_piece(field, ','));
            if (!range) continue;
            const int s = specificity(*range, format);
            if (s > specific) {
                specific = s;
                q = range->q;
            }
        }
        if (q > best_q) {
            best_q = q;
            best_specificity = specific;
            best = format;
        }
    }
    // Only a wildcard asked: the handler's default.
    return best_specificity >= 3 ? best : fallback;
}

std::optional<Format> choose_format(std::string_view query, std::string_view accept,
                                    Format fallback) {
    if (const std::optional<std::string_view> named = query_format(query))
        return format_named(*named);
    return accepted_format(accept, fallback);
}

} // namespace weft::handlers::status
