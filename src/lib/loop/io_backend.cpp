// STUB for tests19 only (the lead drops it for plumb19's).
#include "loop/io_backend.hpp"

#include <cstdlib>

namespace weft {

std::string_view io_backend_name(IoBackend backend) {
    return backend == IoBackend::uring ? "uring" : "epoll";
}

bool uring_built() {
    return false;
}

const std::string& uring_unavailable() {
    static const std::string why = "weft was built without liburing";
    return why;
}

std::optional<IoBackend> io_backend_from_environment() {
    const char* value = std::getenv("WEFT_IO_BACKEND");
    if (!value) return std::nullopt;
    const std::string_view name = value;
    if (name == "epoll") return IoBackend::epoll;
    if (name == "uring") return IoBackend::uring;
    return std::nullopt;
}

IoBackend usable_io_backend(IoBackend wanted, std::string& why) {
    if (wanted == IoBackend::uring && !uring_unavailable().empty()) {
        why = uring_unavailable();
        return IoBackend::epoll;
    }
    return wanted;
}

IoBackend default_io_backend() {
    std::string why;
    return usable_io_backend(io_backend_from_environment().value_or(IoBackend::epoll), why);
}

} // namespace weft
