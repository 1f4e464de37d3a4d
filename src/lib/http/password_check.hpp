#pragma once
// Checking a password against an htpasswd hash without stalling the loop.
//
// bcrypt at cost 10 takes ~50-100 ms of CPU, SHA-crypt's 5000 rounds
// several: on the loop's thread every other connection of that loop would
// wait that long, and a client sending wrong passwords could stall it at
// will. So slow schemes (util/htpasswd.hpp, is_slow) run on a few worker
// threads while the coroutine waits on an eventfd the worker signals; apr1
// and {SHA} (microseconds) run in place.
//
// The eventfd has two descriptors: the coroutine's, which its loop awaits
// and which the coroutine closes (Loop::close_fd) however it ends, and a
// dup the worker writes to and closes. So a coroutine destroyed while its
// check runs (the client went, the loop stopped) leaves the worker nothing
// that can point at a reused fd number or a freed loop; the job, which
// holds copies of the hash and the password, is freed by whichever side is
// done last. Workers run at a lower priority (nice 10) than the loops.

#include "util/htpasswd.hpp"

#include <cstdint>
#include <string_view>

namespace weft::http {

enum class PasswordCheck : std::uint8_t {
    match,
    mismatch,
    busy, // too many checks queued: try later (503)
};

// `password` against `user`'s hash; waits, in a loop's coroutine, for a
// slow scheme's worker. Outside one (tests), checks in place.
PasswordCheck check_password(const HtpasswdUser& user, std::string_view password);

// Checks queued or running now, for tests and the status handler.
std::size_t password_checks_in_flight();

} // namespace weft::http
