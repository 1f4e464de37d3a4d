#pragma once
// MD5 (RFC 1321) and the APR1 password hash built on it ("$apr1$", what
// Apache's `htpasswd` writes by default: Poul-Henning Kamp's MD5-crypt with
// Apache's magic string). MD5 is broken for collisions; it is here only to
// check the htpasswd lines that use it, never to protect anything new.

#include "util/block_hash.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft {

class Md5 : public BlockHash<Md5, false> {
public:
    using Digest = std::array<std::uint8_t, 16>;

    // The digest; the object is spent.
    Digest finish();

    static Digest of(std::string_view bytes) {
        Md5 md5;
        md5.update(bytes);
        return md5.finish();
    }

private:
    friend class BlockHash<Md5, false>;
    void block(const std::uint8_t* bytes);

    std::uint32_t state_[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
};

// "$apr1$" SALT "$" HASH for `password` and the salt of `setting` (a whole
// "$apr1$salt$..." line's hash, or "$apr1$salt"; at most 8 characters count,
// up to the next '$'), or nullopt when `setting` is not an apr1 one.
std::optional<std::string> apr1_hash(std::string_view password, std::string_view setting);

} // namespace weft
