#pragma once
// Which I/O backend a Loop runs on: epoll (readiness, always there) or an
// io_uring ring (liburing; Linux 5.19 or later). Choosing happens once, at
// start-up: the configuration's `io_backend`, overridden by WEFT_IO_BACKEND
// in the environment (the test suite runs a second time with it), made
// usable: uring that cannot run here falls back to epoll, and the reason is
// logged in one line.
//
// Whether uring can run is found by trying what weft needs, once per process:
// a small ring is set up (seccomp, containers and kernel.io_uring_disabled
// refuse here), the kernel's opcodes probed, and the kernel's version read
// for what a probe cannot tell (multishot accept and poll update: 5.19).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft {

enum class IoBackend : std::uint8_t { epoll, uring };

std::string_view io_backend_name(IoBackend backend); // "epoll", "uring"
// "epoll" or "uring" (as written: the configuration's and the environment's
// words), else nullopt.
std::optional<IoBackend> io_backend_named(std::string_view name);

// Built with liburing (the CMake option WEFT_URING found it): WEFT_HAVE_URING.
bool uring_built();

// Empty when a ring with what weft needs can run here; else why not, for the
// one log line ("weft was built without liburing", "kernel.io_uring_disabled
// is 2", "io_uring_setup: Operation not permitted (...)", "the kernel has no
// IORING_OP_ACCEPT (...)"). Probes on the first call, then answers from what
// it found; thread-safe.
const std::string& uring_unavailable();

// WEFT_IO_BACKEND=epoll|uring in the environment, if set to one of those: it
// wins over the configuration. Unset, empty or anything else: nullopt (main
// logs that a value it does not know is ignored).
std::optional<IoBackend> io_backend_from_environment();

// What can run: `wanted`, unless it is uring and uring_unavailable() is not
// empty: then epoll, and `why` gets the reason.
IoBackend usable_io_backend(IoBackend wanted, std::string& why);

// Loop::open()'s default (unit tests): the environment's, else epoll; made
// usable silently.
IoBackend default_io_backend();

// What the probe found, and the reason it makes of it: the pure part of
// uring_unavailable(), apart so that every refusal is tested without a
// kernel that refuses.
struct UringFacts {
    bool built = false;
    int io_uring_disabled = -1; // /proc/sys/kernel/io_uring_disabled; -1: no such file
    int setup_errno = 0;        // io_uring_queue_init's, 0 when a ring was set up
    bool probed = false;        // io_uring_get_probe_ring answered
    // The first opcode weft needs that the probe does not list ("ACCEPT"),
    // and the Linux version that brought it ("5.5"); empty when none.
    std::string_view missing_opcode;
    std::string_view missing_since;
    int kernel_major = 0, kernel_minor = 0; // uname's release; 0.0 when unread
};
// The first Linux with everything stage 1 uses that the probe cannot list,
// and the newest of those features, for the reason: multishot accept (5.19;
// multishot poll and poll update came in 5.13). Stage 2's multishot receive
// makes these 6.0 and "multishot receive".
inline constexpr int kUringKernelMajor = 5, kUringKernelMinor = 19;
inline constexpr std::string_view kUringKernelFeature = "multishot accept";
std::string uring_refusal(const UringFacts& facts);

} // namespace weft
