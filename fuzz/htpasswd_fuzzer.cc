// libFuzzer target for what Basic authentication parses: an htpasswd file
// (util/htpasswd.hpp) and an Authorization field's value
// (http/basic_auth.hpp, util/base64.hpp). The first byte picks which.
//   file: every user it yields has a hash of a scheme weft checks, is found
//         by its name, and a fast scheme's hash checks (without a match for a
//         password that is not the one hashed: the hash itself);
//   field: credentials that decode re-encode to the same base64 (strict
//         decoding reads only canonical text), and split at their first ':'.

#include "http/basic_auth.hpp"
#include "util/ascii.hpp"
#include "util/base64.hpp"
#include "util/htpasswd.hpp"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

using namespace weft;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

void file(std::string_view text) {
    std::string error;
    const std::optional<Htpasswd> users = Htpasswd::parse(text, error);
    if (!users) {
        check(error.starts_with("line "));
        return;
    }
    for (const HtpasswdUser& user : users->users()) {
        check(hash_scheme(user.hash) == user.scheme);
        check(users->find(user.name) == &user);
        if (!is_slow(user.scheme)) check(!verify_password(user, user.hash));
    }
    check(users->users().empty() == (users->decoy() == nullptr));
}

void field(std::string_view value) {
    char decoded[1024];
    const long n = http::decode_basic_credentials(value, decoded, sizeof decoded);
    if (n < 0) return;
    const std::string_view credentials(decoded, static_cast<std::size_t>(n));
    const std::string_view token = ascii::trim_whitespace(value.substr(5));
    check(base64::encode(credentials) == token);
    std::string_view user;
    std::string_view password;
    if (!http::split_credentials(credentials, user, password)) return;
    check(user.find(':') == std::string_view::npos);
    check(user.size() + 1 + password.size() == credentials.size());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] & 1)
        field(rest);
    else
        file(rest);
    return 0;
}
