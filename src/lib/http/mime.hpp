#pragma once
// Media types by file extension, from a built-in table.

#include <string_view>

namespace weft::http {

// The Content-Type for a file name by its extension (case-insensitive), with
// "; charset=utf-8" for text types; application/octet-stream when unknown.
std::string_view mime_type(std::string_view file_name);

} // namespace weft::http
