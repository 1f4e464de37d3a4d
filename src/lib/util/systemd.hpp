#pragma once
// systemd's service protocol, written from its documentation (sd_notify(3),
// sd_listen_fds(3)): no libsystemd.
//
// Notifications are datagrams to $NOTIFY_SOCKET (a path, or an abstract
// socket when it starts with '@'); without it they do nothing. Passed
// sockets are fds 3 .. 3+LISTEN_FDS-1, for this process only when LISTEN_PID
// is its pid.

#include "util/address.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::systemd {

// Sends `state` ("READY=1\nSTATUS=...") to the service manager. 0 when sent
// or when there is no manager to tell; -errno otherwise (-EAGAIN: its queue
// is full; notify never blocks).
int notify(std::string_view state);
// Connects to $NOTIFY_SOCKET once, for every later notify(): before a
// chroot, which would hide its path. Nothing when it is unset or unusable
// (notify() then tries the path each time).
void connect_notify_socket();

// "RELOADING=1\nMONOTONIC_USEC=<now>": what a reload sends before it starts,
// READY=1 following when it is done (systemd.service(5), Type=notify-reload).
std::string reloading_state();

// How often to send WATCHDOG=1: half of WATCHDOG_USEC (at most a day), when
// it is set and WATCHDOG_PID is unset or this process.
std::optional<std::chrono::milliseconds> watchdog_interval();

// Whether two addresses name one socket: family, IP and port, or unix path.
bool same_address(const Address& a, const Address& b);

// A socket passed by the service manager, and the address it is bound to.
struct PassedSocket {
    int fd = -1;
    std::string name; // from LISTEN_FDNAMES, "" when not given
    std::optional<Address> address;
    bool listening = true; // a stream socket in listen(): SO_ACCEPTCONN
    bool open = true;      // false: LISTEN_FDS named more fds than are open
};

// The sockets passed to this process (none when LISTEN_PID is not ours),
// made non-blocking and close-on-exec; the first fd that is not open ends
// the list (open false). Call it before opening any file: an fd of weft's own
// would pass for one systemd passed. LISTEN_PID, LISTEN_FDS and
// LISTEN_FDNAMES are removed from the environment either way, so children
// do not take them for their own.
std::vector<PassedSocket> take_passed_sockets();

// Which passed socket serves each of `listeners`: result[i] is an index into
// `passed`, or -1 for a listener to open as usual. A passed socket that no
// listener names, or one that does not listen, is an error (its fd and
// address in `error`, nullopt).
std::optional<std::vector<int>> match_passed_sockets(const std::vector<Address>& listeners,
                                                     const std::vector<PassedSocket>& passed,
                                                     std::string& error);

} // namespace weft::systemd
