#include "backend_choice.hpp"

#include <cstdlib>

namespace weft {

BackendChoice choose_backend(const config::Config& config) {
    BackendChoice choice;
    choice.wanted = io_backend_named(config.io_backend).value_or(IoBackend::epoll);
    if (const std::optional<IoBackend> environment = io_backend_from_environment()) {
        choice.wanted = *environment;
        choice.from_environment = true;
    } else if (const char* value = std::getenv("WEFT_IO_BACKEND"); value && *value) {
        choice.ignored = value;
    }
    choice.backend = usable_io_backend(choice.wanted, choice.unavailable);
    return choice;
}

std::string backend_warnings(const BackendChoice& choice) {
    std::string lines;
    if (!choice.ignored.empty())
        lines +=
            "weft: WEFT_IO_BACKEND=" + choice.ignored + " is ignored (it may be epoll or uring)\n";
    if (!choice.unavailable.empty())
        lines +=
            "weft: io_backend = uring is unavailable (" + choice.unavailable + "): using epoll\n";
    return lines;
}

std::string describe_backend(const BackendChoice& choice) {
    std::string line = "io_backend = " + std::string(io_backend_name(choice.backend));
    if (!choice.unavailable.empty())
        return line +
               (choice.from_environment ? " (WEFT_IO_BACKEND=uring, but uring is "
                                        : " (uring is ") +
               "unavailable: " + choice.unavailable + ")";
    if (choice.from_environment) line += " (WEFT_IO_BACKEND)";
    return line;
}

} // namespace weft
