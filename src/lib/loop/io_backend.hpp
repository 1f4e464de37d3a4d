#pragma once
// STUB for tests19 only (the lead drops it for plumb19's): DESIGN19.md's
// interface, with a .cpp in which uring is never usable.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft {

enum class IoBackend : std::uint8_t { epoll, uring };
std::string_view io_backend_name(IoBackend backend); // "epoll", "uring"
// Built with liburing (the CMake option found it): WEFT_HAVE_URING.
bool uring_built();
// Empty when a ring with what weft needs can run here; else why not.
const std::string& uring_unavailable();
// WEFT_IO_BACKEND=epoll|uring in the environment, if set to one of those.
std::optional<IoBackend> io_backend_from_environment();
// What can run: `wanted`, unless it is uring and uring_unavailable() is not
// empty: then epoll, and `why` gets the reason.
IoBackend usable_io_backend(IoBackend wanted, std::string& why);
// Loop::open()'s default (unit tests): the environment's, else epoll.
IoBackend default_io_backend();

} // namespace weft
