#pragma once
// HTTP Basic authentication (RFC 7617) against an htpasswd file: nginx's
// auth_basic and auth_basic_user_file.
//
// UserFile: the users of one file, shared by every loop. It is re-read when
// it changes: the first request after a second has passed since the last
// look stats it (one loop wins the look), and a changed file is read and
// parsed there and published under a new generation. A file that became
// unreadable or invalid keeps the last good users, and says so once in the
// error log per change. Readers take no lock per request: each loop keeps
// its own reference to the users and the generation it saw, and compares
// one atomic generation per request; the mutex is taken only to pick up a
// new generation.
//
// BasicAuth: a handler's (or a site's) realm and user file. check() reads
// Authorization: Basic, decodes it strictly (util/base64.hpp), splits at the
// first ':', and checks the password (http/password_check.hpp: slow hashes
// off the loop). A name the file lacks is checked against the file's first
// user's hash and refused whatever that says, so a refusal takes the time a
// wrong password does and does not tell which names exist.
//
// Each loop remembers the credentials it let in lately: 64 HMAC-SHA1
// digests per file, under a key drawn at start (no password is kept in
// memory), dropped when the file's generation changes. A client that sends
// the same right credentials with every request (as browsers do) pays for
// bcrypt once per loop, not per request; wrong ones are never remembered.

#include "http/request.hpp"
#include "util/htpasswd.hpp"

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace weft::http {

class UserFile {
public:
    // The users of `path` as the configuration read them.
    UserFile(std::string path, std::shared_ptr<const Htpasswd> users);

    const std::string& path() const { return path_; }
    std::uint64_t id() const { return id_; }
    // Looks at the file if a second has passed since the last look (any
    // thread; `now_ms` on a monotonic clock), re-reading it if it changed.
    void refresh(std::uint64_t now_ms);
    // Bumped with every new version of the users.
    std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
    // The users now, and their generation.
    std::shared_ptr<const Htpasswd> users(std::uint64_t& generation) const;

private:
    struct Identity {
        dev_t device = 0;
        ino_t inode = 0;
        off_t size = -1;
        timespec modified{};
        timespec changed{};
        bool operator==(const Identity& other) const;
    };
    static std::uint64_t next_id();

    const std::string path_;
    const std::uint64_t id_;
    std::atomic<std::uint64_t> generation_{1};
    std::atomic<std::uint64_t> next_look_ms_{0};
    mutable std::mutex mutex_; // guards what follows
    std::shared_ptr<const Htpasswd> users_;
    // Unknown at first (the configuration read the file without it), so the
    // first look reads the file again: a change between the load and that
    // look is never missed.
    Identity identity_{};
};

enum class AuthVerdict : std::uint8_t {
    allowed,
    refused, // 401 with challenge()
    busy,    // 503: the password checks' queue is full
};

class BasicAuth {
public:
    BasicAuth(std::string_view realm, std::shared_ptr<UserFile> users, bool satisfy_any = false);

    // `WWW-Authenticate`'s value: Basic realm="...", charset="UTF-8", with
    // '"' and '\' in the realm escaped.
    const std::string& challenge() const { return challenge_; }
    const UserFile& users() const { return *users_; }
    // `satisfy any`: a client an allow_from rule names needs no
    // credentials, and one denied may log in (else 403 comes first).
    bool satisfy_any() const { return satisfy_any_; }

    // Whether `request`'s credentials are a user's of the file (may wait:
    // in a coroutine). The credentials are decoded into `scratch` (`size`
    // bytes; longer ones are refused); the password is wiped from it
    // before the call returns, and `user` views the name in it (the name
    // sent, whatever the verdict: the access log's, as nginx's $remote_user).
    AuthVerdict check(const Request& request, char* scratch, std::size_t size,
                      std::string_view& user) const;

private:
    std::string challenge_;
    std::shared_ptr<UserFile> users_;
    bool satisfy_any_;
};

// Splits decoded credentials at the first ':' into user and password;
// false for credentials without one, or with a control character (RFC
// 7617 §2: neither part holds one; a NUL would cut the password short for
// crypt). For the fuzzer and check().
bool split_credentials(std::string_view credentials, std::string_view& user,
                       std::string_view& password);

// The credentials of an Authorization field's value ("Basic" and base64,
// the scheme's name in any case), decoded into `out` (`size` bytes): their
// length, or -1 for anything else.
long decode_basic_credentials(std::string_view value, char* out, std::size_t size);

} // namespace weft::http
