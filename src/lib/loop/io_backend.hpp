#pragma once
// Which I/O backend a loop runs on: epoll, or an io_uring ring (stage 1:
// readiness through the ring). STUB on branch ring19, to build before
// PLUMB's io_backend.hpp lands: the same declarations, a simpler probe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft {

enum class IoBackend : std::uint8_t { epoll, uring };

std::string_view io_backend_name(IoBackend backend); // "epoll", "uring"
// Built with liburing: WEFT_HAVE_URING.
bool uring_built();
// Empty when a ring can run here; else why not. Probes once, thread-safe.
const std::string& uring_unavailable();
// WEFT_IO_BACKEND=epoll|uring in the environment, if set to one of those.
std::optional<IoBackend> io_backend_from_environment();
// `wanted`, unless it is uring and uring_unavailable() is not empty: then
// epoll, and `why` gets the reason.
IoBackend usable_io_backend(IoBackend wanted, std::string& why);
// Loop::open()'s default: the environment's, else epoll; made usable silently.
IoBackend default_io_backend();

} // namespace weft
