// Choosing the I/O backend: the probe's reasons for refusing uring, what it
// finds on this machine, WEFT_IO_BACKEND, and the fallback to epoll.

#include "loop/io_backend.hpp"

#include <catch2/catch.hpp>

#include <sys/utsname.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#if WEFT_HAVE_URING
#include <liburing.h>
#endif

using weft::IoBackend;
using weft::UringFacts;

namespace {

// WEFT_IO_BACKEND set to `value` (unset for nullopt) for the scope, then as
// it was (the uring test presets set it for the whole run).
class EnvironmentBackend {
public:
    explicit EnvironmentBackend(std::optional<std::string> value) {
        if (const char* before = std::getenv("WEFT_IO_BACKEND")) before_ = before;
        set(value);
    }
    ~EnvironmentBackend() { set(before_); }
    EnvironmentBackend(const EnvironmentBackend&) = delete;
    EnvironmentBackend& operator=(const EnvironmentBackend&) = delete;

private:
    static void set(const std::optional<std::string>& value) {
        if (value)
            ::setenv("WEFT_IO_BACKEND", value->c_str(), 1);
        else
            ::unsetenv("WEFT_IO_BACKEND");
    }
    std::optional<std::string> before_;
};

// A kernel with everything, built with liburing: what each test below
// takes away one thing from.
UringFacts usable_facts() {
    UringFacts facts;
    facts.built = true;
    facts.io_uring_disabled = 0;
    facts.probed = true;
    facts.kernel_major = 6;
    facts.kernel_minor = 1;
    return facts;
}

#if WEFT_HAVE_URING
constexpr bool kBuiltWithLiburing = true;

int read_sysctl() {
    std::FILE* file = std::fopen("/proc/sys/kernel/io_uring_disabled", "re");
    if (!file) return -1;
    int value = -1;
    if (std::fscanf(file, "%d", &value) != 1) value = -1;
    std::fclose(file);
    return value;
}
#else
constexpr bool kBuiltWithLiburing = false;
#endif

} // namespace

TEST_CASE("backends have names, and only those two names are backends") {
    CHECK(weft::io_backend_name(IoBackend::epoll) == "epoll");
    CHECK(weft::io_backend_name(IoBackend::uring) == "uring");
    CHECK(weft::io_backend_named("epoll") == IoBackend::epoll);
    CHECK(weft::io_backend_named("uring") == IoBackend::uring);
    CHECK_FALSE(weft::io_backend_named("io_uring"));
    CHECK_FALSE(weft::io_backend_named("URING"));
    CHECK_FALSE(weft::io_backend_named(""));
    CHECK_FALSE(weft::io_backend_named("epoll "));
}

TEST_CASE("a kernel with everything weft needs gives no reason") {
    CHECK(weft::uring_refusal(usable_facts()).empty());
    UringFacts facts = usable_facts();
    facts.kernel_major = 5;
    facts.kernel_minor = 19; // the first with multishot accept
    CHECK(weft::uring_refusal(facts).empty());
    facts.io_uring_disabled = -1; // before 6.6 there is no such sysctl
    CHECK(weft::uring_refusal(facts).empty());
    facts.kernel_major = facts.kernel_minor = 0; // uname unread: the probe decided
    CHECK(weft::uring_refusal(facts).empty());
}

TEST_CASE("each refusal has its reason, the first that applies") {
    UringFacts facts = usable_facts();
    facts.built = false;
    CHECK(weft::uring_refusal(facts) == "weft was built without liburing");
    facts.setup_errno = EPERM; // not looked at when not built
    CHECK(weft::uring_refusal(facts) == "weft was built without liburing");

    facts = usable_facts();
    facts.io_uring_disabled = 2;
    facts.setup_errno = EPERM;
    CHECK(weft::uring_refusal(facts) == "kernel.io_uring_disabled is 2");

    facts.io_uring_disabled = 1;
    CHECK(weft::uring_refusal(facts) ==
          "kernel.io_uring_disabled is 1 and this process is not in kernel.io_uring_group");
    facts.setup_errno = 0; // 1 and in the group (or CAP_SYS_ADMIN): usable
    CHECK(weft::uring_refusal(facts).empty());

    facts = usable_facts();
    facts.setup_errno = EPERM;
    CHECK(weft::uring_refusal(facts) ==
          "io_uring_setup: Operation not permitted (a seccomp filter, or a container's policy)");
    facts.setup_errno = ENOSYS;
    CHECK(weft::uring_refusal(facts) == "io_uring_setup: Function not implemented (a kernel "
                                        "without io_uring, or a seccomp filter)");
    facts.setup_errno = ENOMEM;
    CHECK(weft::uring_refusal(facts) ==
          "io_uring_setup: Cannot allocate memory (the locked-memory limit: ulimit -l)");
    facts.setup_errno = EMFILE;
    CHECK(weft::uring_refusal(facts) == "io_uring_setup: Too many open files");

    facts = usable_facts();
    facts.probed = false;
    CHECK(weft::uring_refusal(facts) ==
          "the kernel cannot list its io_uring opcodes (Linux 5.6 or later)");

    facts = usable_facts();
    facts.missing_opcode = "RECV";
    facts.missing_since = "5.6";
    CHECK(weft::uring_refusal(facts) == "the kernel has no IORING_OP_RECV (Linux 5.6 or later)");

    facts = usable_facts();
    facts.kernel_major = 5;
    facts.kernel_minor = 15;
    CHECK(weft::uring_refusal(facts) == "Linux 5.15 has no multishot accept (Linux 5.19 or later)");
    facts.kernel_major = 4;
    facts.kernel_minor = 20; // a minor above 19 on an older major
    CHECK(weft::uring_refusal(facts) == "Linux 4.20 has no multishot accept (Linux 5.19 or later)");
}

TEST_CASE("the probe agrees with setting a ring up on this machine") {
    const std::string& why = weft::uring_unavailable();
    CHECK(weft::uring_built() == kBuiltWithLiburing);
    if (!why.empty()) WARN("uring is unavailable here: " << why);
#if WEFT_HAVE_URING
    io_uring ring{};
    const int rc = io_uring_queue_init(4, &ring, 0);
    if (rc < 0) {
        // Refused here: the reason is the sysctl's or the setup's.
        if (read_sysctl() == 2)
            CHECK(why == "kernel.io_uring_disabled is 2");
        else if (read_sysctl() != 1)
            CHECK(why.rfind(std::string("io_uring_setup: ") + std::strerror(-rc), 0) == 0);
        return;
    }
    io_uring_queue_exit(&ring);
    CHECK(why.find("io_uring_setup") == std::string::npos);
    CHECK(why.find("io_uring_disabled") == std::string::npos);
    // Every opcode weft needs came before 5.19: a ring that sets up on such
    // a kernel is usable.
    utsname name{};
    int major = 0, minor = 0;
    REQUIRE(::uname(&name) == 0);
    REQUIRE(std::sscanf(name.release, "%d.%d", &major, &minor) == 2);
    if (major > 5 || (major == 5 && minor >= 19)) CHECK(why.empty());
#else
    CHECK(why == "weft was built without liburing");
#endif
}

TEST_CASE("the probe runs once, whichever thread asks first") {
    std::vector<const std::string*> seen(8);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < seen.size(); ++i)
        threads.emplace_back([&seen, i] { seen[i] = &weft::uring_unavailable(); });
    for (std::thread& thread : threads) thread.join();
    for (const std::string* why : seen) CHECK(why == &weft::uring_unavailable());
}

TEST_CASE("WEFT_IO_BACKEND names a backend, or is ignored") {
    {
        EnvironmentBackend unset(std::nullopt);
        CHECK_FALSE(weft::io_backend_from_environment());
        CHECK(weft::default_io_backend() == IoBackend::epoll);
    }
    {
        EnvironmentBackend epoll("epoll");
        CHECK(weft::io_backend_from_environment() == IoBackend::epoll);
        CHECK(weft::default_io_backend() == IoBackend::epoll);
    }
    {
        EnvironmentBackend uring("uring");
        CHECK(weft::io_backend_from_environment() == IoBackend::uring);
        // Made usable, silently.
        CHECK(weft::default_io_backend() ==
              (weft::uring_unavailable().empty() ? IoBackend::uring : IoBackend::epoll));
    }
    for (const char* value : {"", "io_uring", "Uring", "kqueue", "uring,epoll"}) {
        EnvironmentBackend other(value);
        INFO("WEFT_IO_BACKEND=" << value);
        CHECK_FALSE(weft::io_backend_from_environment());
        CHECK(weft::default_io_backend() == IoBackend::epoll);
    }
}

TEST_CASE("usable_io_backend keeps epoll, and uring only where it runs") {
    std::string why = "untouched";
    CHECK(weft::usable_io_backend(IoBackend::epoll, why) == IoBackend::epoll);
    CHECK(why == "untouched");
    why.clear();
    const IoBackend uring = weft::usable_io_backend(IoBackend::uring, why);
    if (weft::uring_unavailable().empty()) {
        CHECK(uring == IoBackend::uring);
        CHECK(why.empty());
    } else {
        CHECK(uring == IoBackend::epoll);
        CHECK(why == weft::uring_unavailable());
    }
}
