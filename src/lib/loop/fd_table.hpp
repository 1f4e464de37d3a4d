#pragma once
// The table of connections: one 64-byte entry per fd, indexed by the fd, for
// every fd a loop watches (connections, awaited fds, listeners, its own
// eventfd). One table serves every loop of a process (an fd belongs to one
// loop at a time), so epoll's data is just the fd and a lookup costs an index.
//
// Entries are a cache line each, so two loops never write the same line. The
// table is sized from RLIMIT_NOFILE and mapped MAP_NORESERVE: untouched
// entries cost no memory, and zeroed memory is a free entry.

#include "loop/timer_wheel.hpp"
#include "loop/yield_protocol.hpp"

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>

namespace weft {

struct Task;

// connection: served by a task; awaited: a foreign fd a task waits on;
// watched: a foreign fd only the layer above watches (FdEntry::data);
// detached: a connection whose task ended with Op::detach, owned by its
// watcher until Loop::close_fd (counted closed then, as a connection).
enum class FdKind : std::uint8_t {
    free = 0,
    connection,
    awaited,
    watched,
    listener,
    internal,
    detached
};

// Readiness bits beyond kReadable/kWritable, sticky: kPeerClosed
// (yield_protocol.hpp), an interest too (Loop::watch_fd,
// Op::suspend_watching_peer), and kHungUp.
inline constexpr std::uint8_t kHungUp = 8; // EPOLLHUP/EPOLLERR: terminal for every waiter

struct alignas(64) FdEntry {
    Task* task;  // the coroutine that owns or awaits the fd; null if parked
    Timer timer; // the fd's timeout (connections) or pause (listeners)
    // For the layer above the loop: the FdWatcher watching the fd; for a
    // parked connection, the ParkedState its handler left with it (loop.hpp).
    void* data;
    std::uint16_t loop;      // index of the loop that watches it
    std::uint16_t handler;   // the loop's handler that serves this connection
    std::uint8_t registered; // interest registered with epoll
    std::uint8_t waiting;    // interest its task waits for now
    std::uint8_t ready;      // readiness seen and not yet handed to a waiter, + sticky bits
    FdKind kind;
    // The loop's list of parked connections, as fd + 1 (0: none).
    std::int32_t parked_prev;
    std::int32_t parked_next;
};
static_assert(sizeof(FdEntry) == 64, "one entry per cache line");

// The two ends of an accepted connection, kept beside its entry: accept4
// gives the peer for free, and the local end is the listener's own address
// (looked up once per connection only for a wildcard listener). Handlers
// that pass them on (FastCGI's REMOTE_ADDR, SERVER_ADDR) then need no
// syscall per request. A unix socket's ends hold only the family.
struct alignas(64) SocketEnds {
    bool known;        // false: not accepted by a loop; look them up
    bool tls;          // a PROXY protocol header said the client spoke TLS to the proxy
    bool proxied;      // a PROXY protocol header came first: the TCP peer relays
    sockaddr_in6 peer; // or a sockaddr_in, by its family
    sockaddr_in6 local;
};
static_assert(sizeof(SocketEnds) == 64, "one per cache line");

class FdTable {
public:
    // Room for fds below `size`; 0 means the RLIMIT_NOFILE soft limit.
    explicit FdTable(std::size_t size = 0);
    ~FdTable();
    FdTable(const FdTable&) = delete;
    FdTable& operator=(const FdTable&) = delete;

    std::size_t size() const { return size_; }
    bool fits(int fd) const { return fd >= 0 && static_cast<std::size_t>(fd) < size_; }
    FdEntry& operator[](int fd) { return entries_[fd]; }
    SocketEnds& ends(int fd) { return ends_[fd]; }
    int fd_of(const FdEntry& entry) const { return static_cast<int>(&entry - entries_); }

    // Makes the entry free again (zeroes it); its timer must be disarmed.
    void reset(int fd);

private:
    FdEntry* entries_ = nullptr;
    SocketEnds* ends_ = nullptr; // beside entries_, as large
    std::size_t size_ = 0;
};

} // namespace weft
