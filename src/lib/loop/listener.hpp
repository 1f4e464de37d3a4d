#pragma once
// Listening sockets: non-blocking, close-on-exec, SO_REUSEADDR, and for TCP
// SO_REUSEPORT (each loop has its own socket on the same port) and
// TCP_NODELAY (accepted sockets inherit it). IPv6 sockets are IPv6-only, so
// [::]:80 and *:80 can both be listened on.

#include "util/address.hpp"

#include <string>

namespace weft {

struct ListenOptions {
    // TCP_DEFER_ACCEPT: a connection is accepted once its first bytes are in
    // (or after about a second without any), so a connect that sends nothing
    // costs no accept, no coroutine and no wake-up. For protocols where the
    // client speaks first.
    bool defer_accept = false;
};

// A listening socket on `address`, or -1 with a one-line reason in `error`.
// A unix socket file left by a dead server is replaced; one that a live
// server answers on is not.
int open_listener(const Address& address, std::string& error, ListenOptions options = {});

// Gives a TCP listening socket opened elsewhere (passed by systemd) what
// open_listener's have: TCP_NODELAY and `options`. Best effort.
void tune_tcp_listener(int fd, ListenOptions options);

} // namespace weft
