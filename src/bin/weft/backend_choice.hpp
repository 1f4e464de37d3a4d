#pragma once
// Which I/O backend weft's loops run on: WEFT_IO_BACKEND, else the
// configuration's io_backend, made usable (loop/io_backend.hpp). Chosen once
// at start; a reload keeps it.

#include "config/config.hpp"
#include "loop/io_backend.hpp"

#include <string>

namespace weft {

struct BackendChoice {
    IoBackend wanted = IoBackend::epoll;  // WEFT_IO_BACKEND's, else the configuration's
    IoBackend backend = IoBackend::epoll; // what runs: wanted, or epoll where uring cannot
    bool from_environment = false;        // WEFT_IO_BACKEND chose
    std::string unavailable;              // why not uring, when wanted and not run
    std::string ignored;                  // WEFT_IO_BACKEND's value, when it names no backend
};

BackendChoice choose_backend(const config::Config& config);

// The lines a start writes to the error log about the choice, each ending
// in '\n' ("" when there is nothing to say): WEFT_IO_BACKEND ignored, uring
// unavailable.
std::string backend_warnings(const BackendChoice& choice);

// For `weft -t`: "io_backend = uring", "io_backend = epoll (uring is
// unavailable: REASON)", with "WEFT_IO_BACKEND" named when it chose.
std::string describe_backend(const BackendChoice& choice);

} // namespace weft
