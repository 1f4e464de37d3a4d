#include "handlers/files/listing.hpp"

#include "http/path.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

namespace weft::handlers {
namespace {

void append_number(std::string& out, std::uint64_t n) {
    char digits[20];
    const char* end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    out.append(digits, static_cast<std::size_t>(end - digits));
}

void append_date(std::string& out, std::time_t t) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[32];
    const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &tm);
    out.append(text, n);
}

ListingEntry entry_at(int dir_fd, const char* name) {
    ListingEntry entry;
    entry.name = name;
    struct stat st {};
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        entry.type = ListingEntry::Type::other;
        return entry;
    }
    entry.modified = st.st_mtim.tv_sec;
    if (S_ISDIR(st.st_mode))
        entry.type = ListingEntry::Type::directory;
    else if (S_ISREG(st.st_mode))
        entry.size = static_cast<std::uint64_t>(st.st_size);
    else
        entry.type = ListingEntry::Type::other;
    return entry;
}

} // namespace

int read_listing(int fd, std::vector<ListingEntry>& entries) {
    DIR* dir = fdopendir(fd);
    if (!dir) {
        const int error = errno;
        close(fd);
        return -error;
    }
    errno = 0;
    while (const dirent* d = readdir(dir)) {
        if (d->d_name[0] != '.') entries.push_back(entry_at(fd, d->d_name));
        errno = 0;
    }
    const int error = errno;
    closedir(dir);
    std::sort(entries.begin(), entries.end(),
              [](const ListingEntry& a, const ListingEntry& b) { return a.name < b.name; });
    return -error;
}

void append_html_escaped(std::string& out, std::string_view text) {
    for (const char c : text) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        case '\'':
            out += "&#39;";
            break;
        default:
            out += c;
        }
    }
}

std::string render_listing(std::string_view url_path, const std::vector<ListingEntry>& entries) {
    std::string page;
    page.reserve(512 + entries.size() * 160);
    page += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of ";
    append_html_escaped(page, url_path);
    page += "</title></head>\n<body>\n<h1>Index of ";
    append_html_escaped(page, url_path);
    page += "</h1>\n<table>\n";
    if (url_path != "/") page += "<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n";
    for (const ListingEntry& e : entries) {
        const bool directory = e.type == ListingEntry::Type::directory;
        // Relative hrefs, with every reserved character encoded: a name
        // can only ever point at itself.
        page += "<tr><td><a href=\"";
        http::append_percent_encoded(page, e.name, false);
        if (directory) page += '/';
        page += "\">";
        append_html_escaped(page, e.name);
        if (directory) page += '/';
        page += "</a></td><td>";
        if (e.type == ListingEntry::Type::file)
            append_number(page, e.size);
        else
            page += '-';
        page += "</td><td>";
        if (e.modified) append_date(page, e.modified);
        page += "</td></tr>\n";
    }
    page += "</table>\n</body></html>\n";
    return page;
}

} // namespace weft::handlers
