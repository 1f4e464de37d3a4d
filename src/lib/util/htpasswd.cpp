#include "util/htpasswd.hpp"

#include "util/base64.hpp"
#include "util/md5.hpp"
#include "util/sha1.hpp"

#include <crypt.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace weft {

namespace {

// crypt(3)'s base64 alphabet: "./0-9A-Za-z".
bool is_crypt64(char c) {
    return c == '.' || c == '/' || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
           (c >= 'a' && c <= 'z');
}

bool all_crypt64(std::string_view text) {
    return std::all_of(text.begin(), text.end(), is_crypt64);
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// $2y$NN$ + 22 characters of salt and 31 of hash.
bool is_bcrypt(std::string_view hash) {
    if (hash.size() != 60 || !hash.starts_with("$2") || hash[3] != '$' || hash[6] != '$')
        return false;
    if (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y') return false;
    if (!is_digit(hash[4]) || !is_digit(hash[5])) return false;
    const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
    return cost >= 4 && cost <= 31 && all_crypt64(hash.substr(7));
}

// $5$[rounds=N$]salt$hash: the salt at most 16 characters, the hash 43
// (SHA-256) or 86 (SHA-512).
bool is_sha_crypt(std::string_view hash, char id, std::size_t hash_size) {
    const char prefix[] = {'$', id, '$'};
    if (!hash.starts_with(std::string_view(prefix, 3))) return false;
    std::string_view rest = hash.substr(3);
    if (rest.starts_with("rounds=")) {
        const std::size_t end = rest.find('$');
        const std::string_view digits = rest.substr(7, end == std::string_view::npos ? 0 : end - 7);
        if (digits.empty() || digits.size() > 9 ||
            !std::all_of(digits.begin(), digits.end(), is_digit))
            return false;
        rest = rest.substr(end + 1);
    }
    const std::size_t dollar = rest.find('$');
    if (dollar == std::string_view::npos || dollar > 16) return false;
    const std::string_view salt = rest.substr(0, dollar);
    const std::string_view digest = rest.substr(dollar + 1);
    return all_crypt64(salt) && digest.size() == hash_size && all_crypt64(digest);
}

// $apr1$salt$hash: the salt 1 to 8 characters, the hash 22.
bool is_apr1(std::string_view hash) {
    if (!hash.starts_with("$apr1$")) return false;
    const std::string_view rest = hash.substr(6);
    const std::size_t dollar = rest.find('$');
    if (dollar == std::string_view::npos || dollar == 0 || dollar > 8) return false;
    const std::string_view digest = rest.substr(dollar + 1);
    return all_crypt64(rest.substr(0, dollar)) && digest.size() == 22 && all_crypt64(digest);
}

// {SHA} and the base64 of 20 bytes.
bool is_sha1(std::string_view hash) {
    if (!hash.starts_with("{SHA}")) return false;
    char digest[base64::decoded_size_max(28)];
    const std::optional<std::size_t> size = base64::decode(hash.substr(5), digest, sizeof digest);
    return size && *size == Sha1::Digest().size();
}

bool has_control(std::string_view text) {
    return std::any_of(text.begin(), text.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// crypt_r's 32 KiB of state, one per thread that verifies, made on first
// use (a thread_local object would take 32 KiB in every thread).
crypt_data& thread_crypt_data() {
    thread_local std::unique_ptr<crypt_data> data;
    if (!data) data = std::make_unique<crypt_data>();
    return *data;
}

} // namespace

std::optional<HashScheme> hash_scheme(std::string_view hash) {
    if (is_bcrypt(hash)) return HashScheme::bcrypt;
    if (is_sha_crypt(hash, '5', 43)) return HashScheme::sha256_crypt;
    if (is_sha_crypt(hash, '6', 86)) return HashScheme::sha512_crypt;
    if (is_apr1(hash)) return HashScheme::apr1;
    if (is_sha1(hash)) return HashScheme::sha1;
    return std::nullopt;
}

bool is_slow(HashScheme scheme) {
    switch (scheme) {
    case HashScheme::bcrypt:
    case HashScheme::sha256_crypt:
    case HashScheme::sha512_crypt:
        return true;
    case HashScheme::apr1:
    case HashScheme::sha1:
        break;
    }
    return false;
}

bool equal_in_constant_time(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char difference = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        difference |= static_cast<unsigned char>(a[i] ^ b[i]);
    // Through a volatile, so the loop cannot become an early exit.
    volatile unsigned char result = difference;
    return result == 0;
}

bool verify_password(const HtpasswdUser& user, std::string_view password) {
    switch (user.scheme) {
    case HashScheme::bcrypt:
    case HashScheme::sha256_crypt:
    case HashScheme::sha512_crypt: {
        // crypt_r reads a C string: a NUL would end the password early.
        if (password.find('\0') != std::string_view::npos || password.size() >= 512) return false;
        const std::string text(password);
        crypt_data& data = thread_crypt_data();
        const char* hashed = crypt_r(text.c_str(), user.hash.c_str(), &data);
        // libxcrypt fails with "*0" or "*1", never equal to a hash.
        const bool ok = hashed && equal_in_constant_time(hashed, user.hash);
        std::memset(data.output, 0, sizeof data.output);
        return ok;
    }
    case HashScheme::apr1: {
        const std::optional<std::string> hashed = apr1_hash(password, user.hash);
        return hashed && equal_in_constant_time(*hashed, user.hash);
    }
    case HashScheme::sha1: {
        const Sha1::Digest digest = Sha1::of(password);
        const std::string hashed =
            "{SHA}" + base64::encode({reinterpret_cast<const char*>(digest.data()), digest.size()});
        return equal_in_constant_time(hashed, user.hash);
    }
    }
    return false;
}

bool parse_htpasswd_line(std::string_view line, std::optional<HtpasswdUser>& out,
                         std::string& error) {
    out.reset();
    if (line.ends_with('\r')) line.remove_suffix(1);
    const std::size_t text = line.find_first_not_of(" \t");
    if (text == std::string_view::npos || line[text] == '#') return true;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
        error = "expected 'user:hash', found no ':'";
        return false;
    }
    const std::string_view name = line.substr(0, colon);
    std::string_view hash = line.substr(colon + 1);
    hash = hash.substr(0, hash.find(':')); // a third field is a comment
    if (name.empty()) {
        error = "the user name is empty";
        return false;
    }
    if (name.size() > 255 || has_control(name)) {
        error = "the user name is over 255 bytes or holds a control character";
        return false;
    }
    const std::optional<HashScheme> scheme = hash_scheme(hash);
    if (!scheme) {
        error = "user '" + std::string(name) +
                "': not a hash weft checks (bcrypt $2y$, SHA-crypt $5$ $6$, $apr1$, {SHA}): "
                "plain-text passwords (htpasswd -p) and DES crypt (-d) are refused, as is a "
                "hash cut short";
        return false;
    }
    out = HtpasswdUser{std::string(name), std::string(hash), *scheme};
    return true;
}

std::optional<Htpasswd> Htpasswd::parse(std::string_view text, std::string& error) {
    Htpasswd file;
    std::vector<std::size_t> lines; // each user's line, for the duplicate's error
    std::size_t number = 0;
    while (!text.empty()) {
        ++number;
        const std::size_t end = text.find('\n');
        const std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        std::optional<HtpasswdUser> user;
        std::string why;
        if (!parse_htpasswd_line(line, user, why)) {
            error = "line " + std::to_string(number) + ": " + why;
            return std::nullopt;
        }
        if (!user) continue;
        file.users_.push_back(std::move(*user));
        lines.push_back(number);
    }
    // Sorted for find(), keeping each user's line to name a duplicate.
    std::vector<std::size_t> order(file.users_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return file.users_[a].name < file.users_[b].name;
    });
    for (std::size_t i = 1; i < order.size(); ++i)
        if (file.users_[order[i]].name == file.users_[order[i - 1]].name) {
            error = "line " + std::to_string(lines[order[i]]) + ": user '" +
                    file.users_[order[i]].name + "' is already on line " +
                    std::to_string(lines[order[i - 1]]);
            return std::nullopt;
        }
    std::vector<HtpasswdUser> sorted;
    sorted.reserve(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        if (order[i] == 0) file.decoy_ = i;
        sorted.push_back(std::move(file.users_[order[i]]));
    }
    file.users_ = std::move(sorted);
    return file;
}

std::optional<Htpasswd> Htpasswd::load(const std::string& path, std::string& error) {
    constexpr off_t kMax = 16 << 20;
    // O_NONBLOCK: a FIFO must not hang the open.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    const auto fail = [&](int code) {
        error = "cannot read " + path + ": " + std::strerror(code);
        if (fd >= 0) ::close(fd);
        return std::nullopt;
    };
    if (fd < 0) return fail(errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fail(errno);
    if (!S_ISREG(st.st_mode)) return fail(EINVAL);
    if (st.st_size > kMax) return fail(EFBIG);
    std::string text;
    char buffer[16384];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0) {
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > kMax) return fail(EFBIG);
    }
    if (n < 0) return fail(errno);
    ::close(fd);
    std::string why;
    std::optional<Htpasswd> file = parse(text, why);
    if (!file) error = path + ":" + why.substr(5); // "line N: x" -> "PATH:N: x"
    return file;
}

const HtpasswdUser* Htpasswd::find(std::string_view name) const {
    const auto at = std::lower_bound(
        users_.begin(), users_.end(), name,
        [](const HtpasswdUser& user, std::string_view key) { return user.name < key; });
    return at != users_.end() && at->name == name ? &*at : nullptr;
}

} // namespace weft
