#include "loop/io_backend.hpp"

#include <sys/utsname.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#if WEFT_HAVE_URING
#include <liburing.h>
#endif

namespace weft {

namespace {

#if WEFT_HAVE_URING
int read_io_uring_disabled() {
    // Linux 6.6 and later: 0 allowed, 1 only for kernel.io_uring_group
    // (and CAP_SYS_ADMIN), 2 never. Older kernels have no such file.
    std::FILE* file = std::fopen("/proc/sys/kernel/io_uring_disabled", "re");
    if (!file) return -1;
    int value = -1;
    if (std::fscanf(file, "%d", &value) != 1) value = -1;
    std::fclose(file);
    return value;
}

void read_kernel_version(UringFacts& facts) {
    utsname name{};
    if (::uname(&name) != 0) return;
    if (std::sscanf(name.release, "%d.%d", &facts.kernel_major, &facts.kernel_minor) != 2)
        facts.kernel_major = facts.kernel_minor = 0;
}

// The opcodes stages 1 and 2 use, with the Linux version that brought each
// (for the reason). IORING_OP_MSG_RING (5.18) is optional: not listed.
struct NeededOpcode {
    int opcode;
    std::string_view name, since;
};
constexpr NeededOpcode kNeededOpcodes[] = {
    {IORING_OP_POLL_ADD, "POLL_ADD", "5.1"},
    {IORING_OP_POLL_REMOVE, "POLL_REMOVE", "5.1"},
    {IORING_OP_ASYNC_CANCEL, "ASYNC_CANCEL", "5.5"},
    {IORING_OP_ACCEPT, "ACCEPT", "5.5"},
    {IORING_OP_RECV, "RECV", "5.6"},
    {IORING_OP_SENDMSG, "SENDMSG", "5.3"},
    {IORING_OP_SEND, "SEND", "5.6"},
};

void probe_ring(UringFacts& facts) {
    io_uring ring{};
    if (const int rc = io_uring_queue_init(4, &ring, 0); rc < 0) {
        facts.setup_errno = -rc;
        return;
    }
    if (io_uring_probe* probe = io_uring_get_probe_ring(&ring)) {
        facts.probed = true;
        for (const NeededOpcode& needed : kNeededOpcodes) {
            if (io_uring_opcode_supported(probe, needed.opcode)) continue;
            facts.missing_opcode = needed.name;
            facts.missing_since = needed.since;
            break;
        }
        io_uring_free_probe(probe);
    }
    io_uring_queue_exit(&ring);
}
#endif

UringFacts probe_uring() {
    UringFacts facts;
#if WEFT_HAVE_URING
    facts.built = true;
    facts.io_uring_disabled = read_io_uring_disabled();
    read_kernel_version(facts);
    // Set up even when the sysctl says 2: the reason names the sysctl then.
    // On a thread of its own: a ring's teardown signals the task that set it
    // up (TWA_SIGNAL), and a recv under SO_RCVTIMEO there fails with EINTR
    // (ring.cpp sets its rings up the same way).
    std::thread([&facts] { probe_ring(facts); }).join();
#endif
    return facts;
}

} // namespace

std::string_view io_backend_name(IoBackend backend) {
    return backend == IoBackend::uring ? "uring" : "epoll";
}

std::optional<IoBackend> io_backend_named(std::string_view name) {
    if (name == "epoll") return IoBackend::epoll;
    if (name == "uring") return IoBackend::uring;
    return std::nullopt;
}

bool uring_built() {
#if WEFT_HAVE_URING
    return true;
#else
    return false;
#endif
}

std::string uring_refusal(const UringFacts& facts) {
    if (!facts.built) return "weft was built without liburing";
    if (facts.io_uring_disabled == 2) return "kernel.io_uring_disabled is 2";
    if (facts.setup_errno == EPERM && facts.io_uring_disabled == 1)
        return "kernel.io_uring_disabled is 1 and this process is not in kernel.io_uring_group";
    if (facts.setup_errno != 0) {
        std::string why = std::string("io_uring_setup: ") + std::strerror(facts.setup_errno);
        switch (facts.setup_errno) {
        case EPERM:
            return why + " (a seccomp filter, or a container's policy)";
        case ENOSYS:
            return why + " (a kernel without io_uring, or a seccomp filter)";
        case ENOMEM:
            return why + " (the locked-memory limit: ulimit -l)";
        default:
            return why;
        }
    }
    if (!facts.probed) return "the kernel cannot list its io_uring opcodes (Linux 5.6 or later)";
    if (!facts.missing_opcode.empty())
        return "the kernel has no IORING_OP_" + std::string(facts.missing_opcode) + " (Linux " +
               std::string(facts.missing_since) + " or later)";
    if (facts.kernel_major != 0 &&
        (facts.kernel_major < kUringKernelMajor ||
         (facts.kernel_major == kUringKernelMajor && facts.kernel_minor < kUringKernelMinor)))
        return "Linux " + std::to_string(facts.kernel_major) + "." +
               std::to_string(facts.kernel_minor) + " has no " + std::string(kUringKernelFeature) +
               " (Linux " + std::to_string(kUringKernelMajor) + "." +
               std::to_string(kUringKernelMinor) + " or later)";
    return {};
}

const std::string& uring_unavailable() {
    // A function-local static: initialised once, by the first caller, while
    // any other waits (C++11's guarantee).
    static const std::string why = uring_refusal(probe_uring());
    return why;
}

std::optional<IoBackend> io_backend_from_environment() {
    const char* value = std::getenv("WEFT_IO_BACKEND");
    if (!value) return std::nullopt;
    return io_backend_named(value);
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
