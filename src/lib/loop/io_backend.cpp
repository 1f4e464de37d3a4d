// STUB on branch ring19 (PLUMB's io_backend.cpp replaces it): uring is
// usable iff weft was built with liburing and a small ring sets up here.
#include "loop/io_backend.hpp"

#include <cstdlib>
#include <cstring>
#include <thread>

#if WEFT_HAVE_URING
#include <liburing.h>
#endif

namespace weft {

std::string_view io_backend_name(IoBackend backend) {
    return backend == IoBackend::uring ? "uring" : "epoll";
}

bool uring_built() {
#if WEFT_HAVE_URING
    return true;
#else
    return false;
#endif
}

const std::string& uring_unavailable() {
    static const std::string why = [] {
#if WEFT_HAVE_URING
        // On a thread of its own: the ring's teardown signals the thread
        // that set it up (TWA_SIGNAL), and a recv with a timeout there
        // would fail with EINTR.
        int rc = 0;
        std::thread([&rc] {
            io_uring ring;
            rc = io_uring_queue_init(4, &ring, 0);
            if (rc == 0) io_uring_queue_exit(&ring);
        }).join();
        if (rc < 0) return std::string("io_uring_setup: ") + std::strerror(-rc);
        return std::string();
#else
        return std::string("weft was built without liburing");
#endif
    }();
    return why;
}

std::optional<IoBackend> io_backend_from_environment() {
    const char* value = std::getenv("WEFT_IO_BACKEND");
    if (!value) return std::nullopt;
    if (std::strcmp(value, "epoll") == 0) return IoBackend::epoll;
    if (std::strcmp(value, "uring") == 0) return IoBackend::uring;
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
