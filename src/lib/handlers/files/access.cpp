#include "handlers/files/access.hpp"

#include "http/request.hpp"
#include "util/ascii.hpp"

#include <cstring>

namespace weft::handlers {

namespace {

constexpr std::string_view kWellKnown = "/.well-known";

} // namespace

std::size_t dot_segment_end(std::string_view path) {
    // From dot to dot: a path holds few, often one (the extension's).
    const char* const begin = path.data();
    const char* const end = begin + path.size();
    const char* p = begin;
    if (path.starts_with(kWellKnown) &&
        (path.size() == kWellKnown.size() || path[kWellKnown.size()] == '/'))
        p += kWellKnown.size();
    for (; p < end; ++p) {
        p = static_cast<const char*>(std::memchr(p, '.', static_cast<std::size_t>(end - p)));
        if (!p) return std::string_view::npos;
        if (p == begin || p[-1] == '/') {
            const void* slash = std::memchr(p, '/', static_cast<std::size_t>(end - p));
            return slash ? static_cast<std::size_t>(static_cast<const char*>(slash) - begin)
                         : path.size();
        }
    }
    return std::string_view::npos;
}

namespace {

enum class Extension : std::uint8_t { other, script, leftover };

// A script's source in any guise: .php, .php5, .phps, .php_, .php-, .phpx,
// .phtml, .phar (and so the names of a copy: x.php.txt, x.php.1). A leftover:
// what editors, merges, deploys and people leave behind, and PHP includes.
Extension extension_kind(std::string_view extension) {
    const std::uint64_t word = lower_word(extension);
    constexpr std::uint64_t kFirstThree = 0xffffff;
    if ((word & kFirstThree) == word_of("php")) return Extension::script;
    if (extension.size() > 8) return Extension::other;
    switch (word) {
    case word_of("phtml"):
    case word_of("phar"):
        return Extension::script;
    case word_of("bak"):
    case word_of("orig"):
    case word_of("save"):
    case word_of("swp"):
    case word_of("swo"):
    case word_of("rej"):
    case word_of("old"):
    case word_of("tmp"):
    case word_of("temp"):
    case word_of("dist"):
    case word_of("backup"):
    case word_of("bk"):
    case word_of("copy"):
    case word_of("inc"):
        return Extension::leftover;
    default:
        return Extension::other;
    }
}

} // namespace

bool is_never_served(std::string_view name) {
    if (const std::size_t slash = name.rfind('/'); slash != std::string_view::npos)
        name.remove_prefix(slash + 1);
    // A precompressed twin is what it compresses: x.php.gz is x.php.
    name = without_twin_suffix(name);
    if (name.empty()) return false;
    if (name.back() == '~' || (name.size() > 1 && name.front() == '#' && name.back() == '#'))
        return true;
    // A script's extension anywhere after the first dot of the name (the
    // copies of a script: x.php.old, x.php.txt, x.php.); a leftover's last.
    for (std::size_t dot = name.find('.', 1); dot != std::string_view::npos;
         dot = name.find('.', dot + 1)) {
        const std::size_t next = name.find('.', dot + 1);
        const std::string_view extension = next == std::string_view::npos
                                               ? name.substr(dot + 1)
                                               : name.substr(dot + 1, next - dot - 1);
        const Extension kind = extension_kind(extension);
        if (kind == Extension::script) return true;
        if (next == std::string_view::npos) return kind == Extension::leftover;
    }
    return false;
}

namespace {

bool denies(const PathPattern& pattern, std::string_view path) {
    if (pattern.matches(path)) return true;
    if (pattern.form() != PathPattern::Form::name) return false;
    // The last segment was matched above; a name has no '/', so each
    // directory's name is its own subject.
    for (std::size_t start = 1, end; (end = path.find('/', start)) != std::string_view::npos;
         start = end + 1)
        if (end > start && pattern.matches(path.substr(start, end - start))) return true;
    return false;
}

} // namespace

bool is_denied(const PathPatterns& deny, std::string_view path) {
    if (deny.empty()) return false;
    const std::string_view plain = without_twin_suffix(path);
    for (const PathPattern& pattern : deny)
        if (denies(pattern, path) || (plain.size() != path.size() && denies(pattern, plain)))
            return true;
    return false;
}

std::string normalised_prefix(std::string prefix) {
    if (prefix.empty() || prefix.front() != '/') prefix.insert(prefix.begin(), '/');
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    return prefix;
}

bool compile_patterns(const std::vector<std::string>& texts, bool deny, PathPatterns& out,
                      std::string& error) {
    out.clear();
    for (const std::string& text : texts) {
        std::optional<PathPattern> pattern = PathPattern::compile(text, error);
        if (pattern && deny && pattern->form() == PathPattern::Form::prefix)
            pattern = PathPattern::compile(normalised_prefix(text), error);
        if (!pattern) {
            error = "bad pattern '" + text + "': " + error;
            return false;
        }
        out.push_back(std::move(*pattern));
    }
    return true;
}

} // namespace weft::handlers
