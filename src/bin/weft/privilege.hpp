#pragma once
// Serving as `user = NAME` (`group = NAME`, else the user's primary group):
// started as root, weft opens its listeners and logs, then drops to that
// user before any loop thread starts. (`chroot = DIR` comes just before the
// server is built: Service::start.)

#include "config/config.hpp"

#include <sys/types.h>

#include <optional>
#include <string>

namespace weft {

struct Identity {
    std::string user;
    uid_t uid = 0;
    gid_t gid = 0;
};

// The configured user and group as ids; nullopt without `user`, or on an
// error (unknown user or group, `group` without `user`: `error` says which).
std::optional<Identity> resolve_identity(const config::Config& config, std::string& error);

// Drops to `who`: supplementary groups (the user's, initgroups), gid, uid,
// then PR_SET_NO_NEW_PRIVS. Not root: fine only if already `who`. 0 or -1
// with `error`.
int drop_privileges(const Identity& who, std::string& error);

} // namespace weft
