#pragma once
// Directory listings (`listing = on`): a plain HTML page of a directory's
// entries, safe whatever the names hold.

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace weft::handlers {

struct ListingEntry {
    std::string name;
    enum class Type : std::uint8_t { file, directory, other } type = Type::file;
    std::uint64_t size = 0; // files only
    std::time_t modified = 0;
};

// The entries of the directory open at `fd` (taken over and closed), dot
// names left out, sorted by name; 0 or -errno. Entries are not followed:
// a symlink is listed as `other`, so the page tells nothing of what it
// points to.
int read_listing(int fd, std::vector<ListingEntry>& entries);

// The page for `url_path` (normalised, ending in '/').
std::string render_listing(std::string_view url_path, const std::vector<ListingEntry>& entries);

// Appends `text` escaped for HTML text and attribute values.
void append_html_escaped(std::string& out, std::string_view text);

} // namespace weft::handlers
