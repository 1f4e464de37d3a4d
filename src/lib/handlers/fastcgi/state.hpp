#pragma once
// What a fastcgi handler resolved from its configuration at create(): read
// by each request (script_call.hpp), shared by every loop, never changed.

#include "fastcgi/upstream.hpp"
#include "handlers/fastcgi/handler.hpp"
#include "handlers/fastcgi/scripts.hpp"
#include "handlers/files/open.hpp"
#include "http/handler.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace weft::handlers {

struct FastcgiHandler::State {
    std::string name;        // "fastcgi /prefix", for the error log
    std::string description; // describe()'s
    std::string root;        // no trailing '/'
    OwnedFd root_fd;
    std::unique_ptr<ScriptResolver> scripts;
    std::unique_ptr<http::Handler> files; // static = on
    std::shared_ptr<fastcgi::Upstream> upstream;
    const http::Handler* handler = nullptr; // the handler this is the state of
    std::string server_name;                // the site's first host; "": the request's Host
    std::string extra_params;
    bool request_buffering = true;
    std::size_t buffers = 0; // a response's spool: memory, then a file
    std::uint64_t max_temp_file_size = 0;
};

} // namespace weft::handlers
