#include "privilege.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace weft {

std::optional<Identity> resolve_identity(const config::Config& config, std::string& error) {
    if (config.user.empty()) {
        if (!config.group.empty()) error = "group = " + config.group + " needs a user = NAME";
        return std::nullopt;
    }
    std::vector<char> buffer(16384);
    passwd pw{};
    passwd* found_user = nullptr;
    ::getpwnam_r(config.user.c_str(), &pw, buffer.data(), buffer.size(), &found_user);
    if (!found_user) {
        error = "user = " + config.user + ": no such user";
        return std::nullopt;
    }
    Identity who{config.user, pw.pw_uid, pw.pw_gid};
    if (!config.group.empty()) {
        group gr{};
        group* found_group = nullptr;
        ::getgrnam_r(config.group.c_str(), &gr, buffer.data(), buffer.size(), &found_group);
        if (!found_group) {
            error = "group = " + config.group + ": no such group";
            return std::nullopt;
        }
        who.gid = gr.gr_gid;
    }
    return who;
}

int drop_privileges(const Identity& who, std::string& error) {
    if (::geteuid() != 0) {
        if (::geteuid() == who.uid && ::getegid() == who.gid) return 0;
        error = "user = " + who.user + ": weft runs as uid " + std::to_string(::geteuid()) +
                " and, not being root, cannot become uid " + std::to_string(who.uid) + " gid " +
                std::to_string(who.gid);
        return -1;
    }
    // glibc applies each of these to every thread of the process (a signal
    // to each, nptl's setxid); they run before the loop threads start anyway.
    const char* step = "initgroups";
    if (::initgroups(who.user.c_str(), who.gid) == 0) {
        step = "setgid";
        if (::setgid(who.gid) == 0) {
            step = "setuid";
            if (::setuid(who.uid) == 0) {
                step = "prctl(PR_SET_NO_NEW_PRIVS)";
                if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) return 0;
            }
        }
    }
    error = "user = " + who.user + ": " + step + ": " + std::strerror(errno);
    return -1;
}

} // namespace weft
