#include "http/mime.hpp"

#include "util/ascii.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

namespace weft::http {
namespace {

struct MimeType {
    std::string_view extension; // lower case, without the dot
    std::string_view type;
};

// Sorted by extension (checked below) for a binary search. text/* types say
// their charset: the files a site serves are UTF-8 far more often than the
// ISO-8859-1 a browser would otherwise assume for some of them.
constexpr std::array kTypes{
    MimeType{"7z", "application/x-7z-compressed"},
    MimeType{"aac", "audio/aac"},
    MimeType{"apk", "application/vnd.android.package-archive"},
    MimeType{"apng", "image/apng"},
    MimeType{"atom", "application/atom+xml"},
    MimeType{"avi", "video/x-msvideo"},
    MimeType{"avif", "image/avif"},
    MimeType{"bin", "application/octet-stream"},
    MimeType{"bmp", "image/bmp"},
    MimeType{"br", "application/x-brotli"},
    MimeType{"bz2", "application/x-bzip2"},
    MimeType{"css", "text/css; charset=utf-8"},
    MimeType{"csv", "text/csv; charset=utf-8"},
    MimeType{"doc", "application/msword"},
    MimeType{"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    MimeType{"eot", "application/vnd.ms-fontobject"},
    MimeType{"epub", "application/epub+zip"},
    MimeType{"flac", "audio/flac"},
    MimeType{"gif", "image/gif"},
    MimeType{"gz", "application/gzip"},
    MimeType{"heic", "image/heic"},
    MimeType{"htm", "text/html; charset=utf-8"},
    MimeType{"html", "text/html; charset=utf-8"},
    MimeType{"ico", "image/x-icon"},
    MimeType{"ics", "text/calendar; charset=utf-8"},
    MimeType{"jar", "application/java-archive"},
    MimeType{"jpeg", "image/jpeg"},
    MimeType{"jpg", "image/jpeg"},
    MimeType{"js", "text/javascript; charset=utf-8"},
    MimeType{"json", "application/json"},
    MimeType{"jsonld", "application/ld+json"},
    MimeType{"jxl", "image/jxl"},
    MimeType{"m3u8", "application/vnd.apple.mpegurl"},
    MimeType{"m4a", "audio/mp4"},
    MimeType{"m4v", "video/mp4"},
    MimeType{"map", "application/json"},
    MimeType{"md", "text/markdown; charset=utf-8"},
    MimeType{"mid", "audio/midi"},
    MimeType{"midi", "audio/midi"},
    MimeType{"mjs", "text/javascript; charset=utf-8"},
    MimeType{"mkv", "video/x-matroska"},
    MimeType{"mov", "video/quicktime"},
    MimeType{"mp3", "audio/mpeg"},
    MimeType{"mp4", "video/mp4"},
    MimeType{"mpd", "application/dash+xml"},
    MimeType{"mpeg", "video/mpeg"},
    MimeType{"mpg", "video/mpeg"},
    MimeType{"oga", "audio/ogg"},
    MimeType{"ogg", "audio/ogg"},
    MimeType{"ogv", "video/ogg"},
    MimeType{"opus", "audio/ogg"},
    MimeType{"otf", "font/otf"},
    MimeType{"pdf", "application/pdf"},
    MimeType{"png", "image/png"},
    MimeType{"ppt", "application/vnd.ms-powerpoint"},
    MimeType{"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
    MimeType{"rar", "application/vnd.rar"},
    MimeType{"rss", "application/rss+xml"},
    MimeType{"rtf", "application/rtf"},
    MimeType{"svg", "image/svg+xml"},
    MimeType{"tar", "application/x-tar"},
    MimeType{"tif", "image/tiff"},
    MimeType{"tiff", "image/tiff"},
    MimeType{"ts", "video/mp2t"},
    MimeType{"ttf", "font/ttf"},
    MimeType{"txt", "text/plain; charset=utf-8"},
    MimeType{"vtt", "text/vtt; charset=utf-8"},
    MimeType{"wasm", "application/wasm"},
    MimeType{"wav", "audio/wav"},
    MimeType{"weba", "audio/webm"},
    MimeType{"webm", "video/webm"},
    MimeType{"webmanifest", "application/manifest+json"},
    MimeType{"webp", "image/webp"},
    MimeType{"woff", "font/woff"},
    MimeType{"woff2", "font/woff2"},
    MimeType{"xhtml", "application/xhtml+xml"},
    MimeType{"xls", "application/vnd.ms-excel"},
    MimeType{"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    MimeType{"xml", "application/xml"},
    MimeType{"yaml", "application/yaml"},
    MimeType{"yml", "application/yaml"},
    MimeType{"zip", "application/zip"},
    MimeType{"zst", "application/zstd"},
};

constexpr bool by_extension(const MimeType& a, const MimeType& b) {
    return a.extension < b.extension;
}
static_assert(std::is_sorted(kTypes.begin(), kTypes.end(), by_extension));
static_assert(std::adjacent_find(kTypes.begin(), kTypes.end(), [](auto& a, auto& b) {
                  return a.extension == b.extension;
              }) == kTypes.end());

constexpr std::size_t kLongestExtension = 11; // "webmanifest"
constexpr std::string_view kUnknown = "application/octet-stream";

} // namespace

std::string_view mime_type(std::string_view file_name) {
    const std::size_t dot = file_name.rfind('.');
    if (dot == std::string_view::npos) return kUnknown;
    const std::string_view extension = file_name.substr(dot + 1);
    // A dot in a directory name is no extension of the file ("/a.d/README").
    if (extension.empty() || extension.size() > kLongestExtension ||
        extension.find('/') != std::string_view::npos)
        return kUnknown;
    char lower[kLongestExtension];
    for (std::size_t i = 0; i < extension.size(); ++i) lower[i] = ascii::to_lower(extension[i]);
    const MimeType key{{lower, extension.size()}, {}};
    const auto* it = std::lower_bound(kTypes.begin(), kTypes.end(), key, by_extension);
    if (it == kTypes.end() || it->extension != key.extension) return kUnknown;
    return it->type;
}

} // namespace weft::http
