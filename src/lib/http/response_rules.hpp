#pragma once
// What a configuration adds to a handler's responses (conf/weft.conf:
// "headers", "cache_control", "expires", "error_page"), resolved at load from
// the handler's keys and its site's (handlers/build.hpp) into ready-made
// bytes: the Exchange applies them where it assembles a head, with no
// parsing and no allocation per response.
//
// A handler without any of those keys has none (a null pointer), and its
// responses pay one pointer test for it.

#include "http/date.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weft::http {

// The page a status gets instead of the built-in one.
struct ErrorPageTarget {
    int status = 0;
    bool from_file = false;
    // A normalised path routed in the same site as an internal GET, or
    std::string route;
    // a file's bytes, read once at start (shared by every status and
    // handler of the site that names the file; null for `weft -t`), and
    // their Content-Type.
    std::shared_ptr<const std::string> body;
    std::string content_type;
};

struct ResponseRules {
    // The most these lines take (`lines` + the Cache-Control and Expires
    // lines): more is a config error at load. They share the Exchange's
    // 4 KiB with the handler's fields: a response whose fields leave too
    // little room for them is a 500.
    static constexpr std::size_t kMaxLines = 2048;
    // "Expires: <date>\r\n", which `expires` adds to the lines.
    static constexpr std::size_t kExpiresLineSize = 9 + kHttpDateLength + 2;

    // Field lines ("Name: value\r\n" each) appended to every response: the
    // `set` and `add` entries.
    std::string lines;
    // Names (lowercase) dropped from the handler's own fields first: the
    // `set` and `remove` entries.
    std::vector<std::string> drops;
    // "Cache-Control: ...\r\n" (cache_control, with max-age=N from
    // expires), for responses below 400 without a Cache-Control of their
    // own; empty: none.
    std::string cache_control_line;
    // `expires` in seconds (Expires: now + this), or -1 for none.
    std::int64_t expires = -1;
    std::vector<ErrorPageTarget> error_pages;

    // Whether a head is changed at all (else only error pages are kept).
    bool edits_head() const {
        return !lines.empty() || !drops.empty() || !cache_control_line.empty();
    }
    bool empty() const { return !edits_head() && error_pages.empty(); }
    const ErrorPageTarget* error_page(int status) const {
        for (const ErrorPageTarget& page : error_pages)
            if (page.status == status) return &page;
        return nullptr;
    }
};

} // namespace weft::http
