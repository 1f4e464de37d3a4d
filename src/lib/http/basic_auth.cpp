#include "http/basic_auth.hpp"

#include "http/password_check.hpp"
#include "util/ascii.hpp"
#include "util/base64.hpp"
#include "util/sha1.hpp"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>
#include <vector>

namespace weft::http {

namespace {

constexpr std::uint64_t kLookEveryMs = 1000;
constexpr std::size_t kRemembered = 64; // per loop and file

std::uint64_t now_ms() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1000 +
           static_cast<std::uint64_t>(now.tv_nsec) / 1'000'000;
}

// The key remembered credentials are digested under: drawn once, never
// written anywhere.
std::string_view process_key() {
    static const std::array<char, 32> key = [] {
        std::array<char, 32> bytes{};
        std::size_t got = 0;
        while (got < bytes.size()) {
            const ssize_t n = getrandom(bytes.data() + got, bytes.size() - got, 0);
            if (n > 0) got += static_cast<std::size_t>(n);
        }
        return bytes;
    }();
    return {key.data(), key.size()};
}

// One loop's view of one user file.
struct View {
    std::uint64_t file_id = 0;
    std::weak_ptr<const UserFile> file; // expired: the server was replaced
    std::uint64_t generation = 0;       // of `users`; 0: none yet
    std::shared_ptr<const Htpasswd> users;
    std::array<Sha1::Digest, kRemembered> remembered{};
    std::size_t count = 0; // remembered[0, count) are in use
    std::size_t next = 0;  // the one replaced next

    bool remembers(const Sha1::Digest& digest) const {
        for (std::size_t i = 0; i < count; ++i)
            if (remembered[i] == digest) return true;
        return false;
    }
    void remember(const Sha1::Digest& digest) {
        remembered[next] = digest;
        next = (next + 1) % kRemembered;
        count = std::max(count, next == 0 ? kRemembered : next);
    }
};

// This thread's view of `file`, made on first use. The reference is good
// until the coroutine next waits (another may add a view meanwhile).
View& view_of(const std::shared_ptr<UserFile>& file) {
    thread_local std::vector<View> views;
    for (View& view : views)
        if (view.file_id == file->id()) return view;
    std::erase_if(views, [](const View& view) { return view.file.expired(); });
    View& view = views.emplace_back();
    view.file_id = file->id();
    view.file = file;
    return view;
}

// The users of `view`, brought up to its file's generation (then the
// credentials it remembered are forgotten).
const std::shared_ptr<const Htpasswd>& current_users(View& view, const UserFile& file) {
    if (file.generation() != view.generation) {
        view.users = file.users(view.generation);
        view.count = view.next = 0;
    }
    return view.users;
}

void append_escaped(std::string& out, std::string_view text) {
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
}

} // namespace

// --- UserFile -------------------------------------------------------------------

UserFile::UserFile(std::string path, std::shared_ptr<const Htpasswd> users)
    : path_(std::move(path)), id_(next_id()), users_(std::move(users)) {}

std::uint64_t UserFile::next_id() {
    static std::atomic<std::uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

bool UserFile::Identity::operator==(const Identity& other) const {
    return device == other.device && inode == other.inode && size == other.size &&
           modified.tv_sec == other.modified.tv_sec && modified.tv_nsec == other.modified.tv_nsec &&
           changed.tv_sec == other.changed.tv_sec && changed.tv_nsec == other.changed.tv_nsec;
}

void UserFile::refresh(std::uint64_t now) {
    std::uint64_t due = next_look_ms_.load(std::memory_order_relaxed);
    if (now < due) return;
    // One thread looks; the others go on with what they have.
    if (!next_look_ms_.compare_exchange_strong(due, now + kLookEveryMs, std::memory_order_relaxed))
        return;
    std::lock_guard lock(mutex_);
    struct stat st {};
    Identity seen;
    seen.size = -2; // gone
    if (::stat(path_.c_str(), &st) == 0)
        seen = {st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
    if (seen == identity_) return;
    identity_ = seen;
    std::string error;
    std::optional<Htpasswd> users =
        seen.size == -2 ? (error = "cannot read " + path_ + ": " + std::strerror(errno),
                           std::optional<Htpasswd>())
                        : Htpasswd::load(path_, error);
    if (!users) {
        std::fprintf(stderr, "weft: %s (the users read before stay)\n", error.c_str());
        return;
    }
    users_ = std::make_shared<const Htpasswd>(std::move(*users));
    generation_.fetch_add(1, std::memory_order_release);
}

std::shared_ptr<const Htpasswd> UserFile::users(std::uint64_t& generation) const {
    std::lock_guard lock(mutex_);
    generation = generation_.load(std::memory_order_acquire);
    return users_;
}

// --- Authorization ----------------------------------------------------------------

bool split_credentials(std::string_view credentials, std::string_view& user,
                       std::string_view& password) {
    const std::size_t colon = credentials.find(':');
    if (colon == std::string_view::npos) return false;
    if (std::any_of(credentials.begin(), credentials.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
        return false;
    user = credentials.substr(0, colon);
    password = credentials.substr(colon + 1);
    return true;
}

long decode_basic_credentials(std::string_view value, char* out, std::size_t size) {
    constexpr std::string_view kScheme = "basic";
    if (value.size() <= kScheme.size() ||
        !ascii::equals_ignoring_case(value.substr(0, kScheme.size()), kScheme) ||
        (value[kScheme.size()] != ' ' && value[kScheme.size()] != '\t'))
        return -1;
    const std::string_view token = ascii::trim_whitespace(value.substr(kScheme.size()));
    if (token.empty()) return -1;
    const std::optional<std::size_t> n = base64::decode(token, out, size);
    return n ? static_cast<long>(*n) : -1;
}

// --- BasicAuth ----------------------------------------------------------------------

BasicAuth::BasicAuth(std::string_view realm, std::shared_ptr<UserFile> users, bool satisfy_any)
    : users_(std::move(users)), satisfy_any_(satisfy_any) {
    challenge_ = "Basic realm=\"";
    append_escaped(challenge_, realm);
    challenge_ += "\", charset=\"UTF-8\"";
}

AuthVerdict BasicAuth::check(const Request& request, char* scratch, std::size_t size,
                             std::string_view& user) const {
    // Every request, with credentials or not, may be the one that looks.
    users_->refresh(now_ms());
    const std::string_view field = request.header("Authorization");
    if (field.data() == nullptr) return AuthVerdict::refused;
    const long n = decode_basic_credentials(field, scratch, size);
    if (n < 0) return AuthVerdict::refused;
    const std::string_view credentials(scratch, static_cast<std::size_t>(n));
    std::string_view name;
    std::string_view password;
    if (!split_credentials(credentials, name, password)) {
        explicit_bzero(scratch, credentials.size());
        return AuthVerdict::refused;
    }
    user = name;
    // After this, only the name stays in scratch.
    const auto wipe = [&] {
        explicit_bzero(scratch + name.size(), credentials.size() - name.size());
    };

    const Sha1::Digest digest = hmac_sha1(process_key(), {credentials});
    View& view = view_of(users_);
    // Held across the wait: a new generation may replace the view's.
    const std::shared_ptr<const Htpasswd> users = current_users(view, *users_);
    const std::uint64_t generation = view.generation;
    if (view.remembers(digest)) {
        wipe();
        return AuthVerdict::allowed;
    }
    const HtpasswdUser* found = users->find(name);
    const HtpasswdUser* against = found ? found : users->decoy();
    if (!against) {
        wipe();
        return AuthVerdict::refused;
    }
    const PasswordCheck result = check_password(*against, password);
    wipe();
    if (result == PasswordCheck::busy) return AuthVerdict::busy;
    if (result != PasswordCheck::match || !found) return AuthVerdict::refused;
    // Remembered only under the users it was checked against.
    View& after = view_of(users_);
    if (after.generation == generation) after.remember(digest);
    return AuthVerdict::allowed;
}

} // namespace weft::http
