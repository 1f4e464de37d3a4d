#pragma once
// An htpasswd file, as Apache's `htpasswd` (apache2-utils) writes it: one
// `user:hash` a line, `#` comments and blank lines skipped, a third
// `:field` ignored (as Apache and nginx do). Hashes weft checks:
//   $2y$ $2b$ $2a$  bcrypt (htpasswd -B)            crypt_r(3), libcrypt
//   $5$ $6$         SHA-256/512-crypt (-2, -5)      crypt_r(3), libcrypt
//   $apr1$          Apache's MD5-crypt (the default) util/md5.hpp
//   {SHA}           base64 of SHA-1, unsalted (-s)  util/sha1.hpp
// Refused at load, with the line: a plain-text password (-p) and DES crypt
// (-d). nginx takes both; weft refuses them because either puts a password
// one read of the file away (DES crypt also checks only 8 characters), and
// a line that is neither a hash weft knows nor plain text cannot be told
// apart from one.
//
// A user named twice is an error too (Apache and nginx use the first line,
// so the second is dead and likely a mistake).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

enum class HashScheme : std::uint8_t { bcrypt, sha256_crypt, sha512_crypt, apr1, sha1 };

struct HtpasswdUser {
    std::string name;
    std::string hash; // as written
    HashScheme scheme = HashScheme::bcrypt;
};

// One line (without its line end; a trailing CR is dropped): a user, or
// nothing for a blank or comment line, or false with a reason in `error`.
bool parse_htpasswd_line(std::string_view line, std::optional<HtpasswdUser>& out,
                         std::string& error);

// Which scheme `hash` is written in, if weft checks it (the whole hash
// well-formed, not only its prefix).
std::optional<HashScheme> hash_scheme(std::string_view hash);

// Whether checking a hash of `scheme` takes long enough to stall a loop
// (bcrypt, SHA-crypt: milliseconds) rather than microseconds.
bool is_slow(HashScheme scheme);

// `password` against `user`'s hash, the last comparison in constant time.
// Slow schemes run crypt_r here: call them off the loop.
bool verify_password(const HtpasswdUser& user, std::string_view password);

// Equal bytes, in time that depends only on the lengths.
bool equal_in_constant_time(std::string_view a, std::string_view b);

class Htpasswd {
public:
    // The users of a file's text; nullopt with "line N: reason" in `error`.
    static std::optional<Htpasswd> parse(std::string_view text, std::string& error);
    // The file at `path` (a regular file of at most 16 MiB); nullopt with
    // "cannot read PATH: reason" or "PATH:N: reason" in `error`.
    static std::optional<Htpasswd> load(const std::string& path, std::string& error);

    // The user named `name` (bytes compared as they are), or nullptr.
    const HtpasswdUser* find(std::string_view name) const;
    // The user whose hash an unknown name is checked against (and refused
    // whatever the result), so that refusing it costs what a wrong
    // password does: the file's first user; nullptr when it has none.
    const HtpasswdUser* decoy() const { return users_.empty() ? nullptr : &users_[decoy_]; }
    const std::vector<HtpasswdUser>& users() const { return users_; }

private:
    std::vector<HtpasswdUser> users_; // sorted by name
    std::size_t decoy_ = 0;
};

} // namespace weft
