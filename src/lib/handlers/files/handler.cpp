#include "handlers/files/handler.hpp"

#include "handlers/files/access.hpp"
#include "handlers/files/cache.hpp"
#include "handlers/files/conditions.hpp"
#include "handlers/files/encoding.hpp"
#include "handlers/files/listing.hpp"
#include "handlers/files/ranges.hpp"
#include "handlers/files/state.hpp"
#include "handlers/per_loop.hpp"
#include "handlers/redirect.hpp"
#include "http/date.hpp"
#include "http/exchange.hpp"
#include "http/mime.hpp"
#include "loop/loop.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <vector>

namespace weft::handlers {
namespace {

// Per loop and handler; files up to kCachedFileMax are kept.
constexpr std::size_t kCacheCapacity = 8u << 20;
constexpr std::uint64_t kCachedFileMax = 64u << 10;
// For entries that could not be watched (out of inotify watches), which are
// checked against the disk at every use: a file modified this recently may
// still be being written, and a rewrite of the same size within the file
// system's timestamp granularity would leave its stamp unchanged, so a copy
// read mid-write would never be replaced. Such files are served from disk
// until they settle. Watched entries need no such rule: every write after
// the watch is an event.
constexpr std::time_t kSettleSeconds = 2;

constexpr std::string_view kTextPlain = "text/plain; charset=utf-8";

std::time_t wall_seconds() {
    timespec now{};
    clock_gettime(CLOCK_REALTIME_COARSE, &now);
    return now.tv_sec;
}

// What a loop keeps for a handler: its cache and its view of the root.
struct LoopFiles {
    explicit LoopFiles(const std::string& root_path) : cache(kCacheCapacity), root(root_path) {}
    FileCache cache;
    LoopRoot root;
    // The root generation and the FsWatch the cache's entries were made
    // under: when either moves, they all go.
    std::uint64_t root_generation = 0;
    std::uint64_t watch_id = 0;
};

LoopFiles& loop_files(const FilesHandler::State& settings) {
    return per_loop<LoopFiles>(settings.id, settings.alive, settings.root_path);
}

// This loop's FsWatch, told of every change made before the request's
// bytes arrived (fs_watch.hpp: one read).
FsWatch* synced_fs_watch() {
    Loop* loop = Loop::current();
    FsWatch* watch = loop ? loop->fs_watch() : nullptr;
    if (watch) watch->drain();
    return watch;
}

// A file's path beneath the root: the URL path without its leading '/',
// the index name after a trailing '/', and a twin's suffix.
class FsPath {
public:
    explicit FsPath(std::string_view url_path, std::string_view index)
        : directory_(url_path.substr(1)), index_(url_path.back() == '/' ? index : "") {}

    // NUL-terminated, or nullptr when too long for any file system.
    const char* file(Encoding encoding) { return compose(index_, twin_suffix(encoding)); }
    // The directory a trailing-'/' path names ("" for the root).
    const char* directory() { return compose({}, {}); }

private:
    const char* compose(std::string_view index, std::string_view suffix) {
        if (directory_.size() + index.size() + suffix.size() >= sizeof text_) return nullptr;
        char* p = std::copy(directory_.begin(), directory_.end(), text_);
        p = std::copy(index.begin(), index.end(), p);
        p = std::copy(suffix.begin(), suffix.end(), p);
        *p = '\0';
        return text_;
    }

    std::string_view directory_;
    std::string_view index_;
    char text_[PATH_MAX];
};

// What a response describes: a file's bytes in memory or in an open file,
// and its validators.
struct Representation {
    std::string_view content_type;
    Encoding encoding;
    std::uint64_t size;
    std::time_t modified;
    std::string_view etag;
    std::string_view last_modified;
    const char* body;                 // the bytes in memory, or nullptr:
    int fd;                           // read them from here
    std::string_view head_lines = {}; // a 200's fields, ready-made (cached files)
};

void send_page(http::Exchange& exchange, int status, std::string_view text) {
    exchange.status(status);
    exchange.header("Content-Type", kTextPlain);
    exchange.send(text);
}

void answer_open_error(http::Exchange& exchange, int error) {
    switch (error) {
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
        exchange.send_error(404);
        return;
    case EACCES:
    case EPERM:
    case EXDEV: // a path out of the root
    case ELOOP: // a symlink the resolver would not follow
        exchange.send_error(403);
        return;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
        exchange.send_error(503);
        return;
    default:
        exchange.send_error(500);
        return;
    }
}

// Whether a request is refused (403) before the disk is asked: a hidden
// segment or a denied path in the URL, or a name never served on disk (an
// alias may name another file than the URL: the name on disk decides). Each
// depends on nothing but the handler's settings and the path, and the URL
// path and `local` determine each other (PathMap), so a cache entry, made
// only for a request that passed them, answers without them.
bool refused(const FilesHandler::State& settings, std::string_view url,
             std::optional<std::string_view> local) {
    if (url.empty() || url.front() != '/' || has_dot_segment(url) || settings.denies(url))
        return true;
    return local && is_never_served(*local);
}

// Whether refused() has passed a request yet.
enum class Checks : std::uint8_t { pending, passed };

// Reads size bytes from the start of fd; false when the file is not that
// size any more.
bool read_whole(int fd, std::string& body, std::uint64_t size) {
    body.resize(size);
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = pread(fd, body.data() + done, size - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    char extra;
    return pread(fd, &extra, 1, static_cast<off_t>(size)) == 0;
}

// One request to the handler.
class FileRequest {
public:
    // `path` is the request's beneath the root (PathMap::local()).
    FileRequest(http::Exchange& exchange, const FilesHandler::State& settings, LoopFiles& files,
                std::string_view path, Checks checks)
        : exchange_(exchange), settings_(settings), path_(path), checks_(checks),
          conditions_(exchange.request()), cache_(files.cache), watch_(synced_fs_watch()),
          root_(files.root.fd(watch_)), index_(index_name()), key_(cache_key()),
          fs_path_(path_, index_) {
        const std::uint64_t watch_id = watch_ ? watch_->id() : 0;
        if (files.root_generation != files.root.generation() || files.watch_id != watch_id) {
            cache_.clear();
            files.root_generation = files.root.generation();
            files.watch_id = watch_id;
        }
    }

    void serve();

private:
    bool admit();
    bool fresh(CachedFile& file, Encoding encoding);
    bool watch_entry(CachedFile& file, const char* path, Walked expected, struct stat& st,
                     int fd = -1);
    bool serve_twin(Encoding encoding);
    void remember_missing_twins();
    void serve_file();
    void serve_opened(OwnedFd fd, const struct stat& st, Encoding encoding);
    void serve_directory();
    // The index a directory path names: the first of the list that exists
    // (the first when none does); "" for a file's path.
    std::string_view index_name() const {
        if (path_.back() != '/' || settings_.index.empty()) return {};
        return chosen_index();
    }
    std::string_view chosen_index() const;
    // Whether `deny` refuses the index `index` of this directory's path.
    bool index_denied(std::string_view index) const;
    std::string_view cache_key() {
        if (path_.back() != '/' || settings_.index.size() < 2) return path_;
        // A NUL (no path holds one) between them: /d/ answered by its index
        // x.html must not be the key of the path /d/x.html, which the
        // checks judge on its own (its name may be hidden: .x.html).
        key_storage_.assign(path_).append(1, '\0').append(index_);
        return key_storage_;
    }
    std::string_view content_type() const {
        return http::mime_type(path_.back() == '/' ? index_ : path_);
    }

    void respond(const Representation& r);
    void respond_from(CachedFile& file, Encoding encoding);
    std::string entity_lines(const CachedFile& file, Encoding encoding) const;
    void validators(const Representation& r);
    void send_ranges(const Representation& r, const RangeRequest& ranges);

    http::Exchange& exchange_;
    const FilesHandler::State& settings_;
    std::string_view path_; // beneath the root; the URL's is exchange_.path()
    Checks checks_;
    bool admitted_ = false; // admit() has passed the request
    ConditionFields conditions_;
    FileCache& cache_;
    FsWatch* watch_; // this loop's, or nullptr: every entry is checked at each use
    int root_;       // or -errno
    std::string_view index_;
    // What the cache knows the answer by: the path, and for a directory's
    // path with several index names the one chosen after it (a cached
    // index.htm must not answer once an index.html before it appears).
    std::string key_storage_;
    std::string_view key_;
    FsPath fs_path_;
    std::uint8_t missing_twins_ = 0; // bits by Encoding: not found on disk
};

std::string_view FileRequest::chosen_index() const {
    const std::vector<std::string>& names = settings_.index;
    // A denied index is as if it were not there (nginx's index would end
    // in the deny): the next name, else the directory's listing or 403.
    std::string_view first;
    for (const std::string& index : names) {
        if (index_denied(index)) continue;
        if (first.empty()) first = index;
        // Several: one fstatat each until one exists (only for a
        // directory's path, and only when the handler lists more than one).
        if (names.size() == 1 || root_ < 0) break;
        char name[PATH_MAX];
        const std::string_view directory = path_.substr(1);
        if (directory.size() + index.size() >= sizeof name) break;
        char* end = std::copy(directory.begin(), directory.end(), name);
        *std::copy(index.begin(), index.end(), end) = '\0';
        struct stat st {};
        if (fstatat(root_, name, &st, 0) == 0 && S_ISREG(st.st_mode)) return index;
    }
    return first;
}

bool FileRequest::index_denied(std::string_view index) const {
    if (settings_.deny.empty()) return false;
    // `deny` matches URL paths: the directory's, then the name.
    const std::string_view directory = exchange_.path();
    char url[PATH_MAX];
    if (directory.size() + index.size() > sizeof url) return true; // no file has such a path
    char* end = std::copy(directory.begin(), directory.end(), url);
    end = std::copy(index.begin(), index.end(), end);
    return settings_.denies({url, static_cast<std::size_t>(end - url)});
}

void FileRequest::serve() {
    TwinOrder twins;
    if (settings_.precompressed && !(path_.back() == '/' && index_.empty()))
        twins = twin_order(conditions_.accept_encoding());
    // The twins the client takes, best first, then the file itself; the
    // cache answers for each what it knows, the disk the rest. An entry
    // exists only for a key whose request was admitted, and admit() depends
    // on nothing but the key and the settings (refused(), cache_key()): a
    // fresh one answers without asking again.
    for (std::uint8_t i = 0; i <= twins.count; ++i) {
        const Encoding encoding = i < twins.count ? twins.twins[i] : Encoding::identity;
        if (root_ >= 0) {
            CachedFile* cached = cache_.find(key_, encoding);
            if (cached && fresh(*cached, encoding)) {
                if (cached->absent) continue;
                return respond_from(*cached, encoding);
            }
        }
        if (!admit()) return;
        if (encoding == Encoding::identity) return serve_file();
        if (serve_twin(encoding)) return;
    }
}

// Whether the request may ask the disk; when not, it has been answered.
bool FileRequest::admit() {
    if (admitted_) return true;
    if (checks_ == Checks::pending && refused(settings_, exchange_.path(), path_)) {
        exchange_.send_error(403);
        return false;
    }
    if (root_ < 0) {
        answer_open_error(exchange_, -root_);
        return false;
    }
    if (is_never_served(index_)) {
        exchange_.send_error(403);
        return false;
    }
    admitted_ = true;
    return true;
}

// Whether a cached entry still holds what the disk says: a watched one
// unless something on its path changed (no syscall), any other by its stamp
// (one fstatat); a stale one is dropped.
bool FileRequest::fresh(CachedFile& file, Encoding encoding) {
    if (file.watched) {
        if (file.watch.current(*watch_)) return true;
        cache_.erase(key_, encoding);
        return false;
    }
    // fstatat may follow a symlink the open would refuse; that only
    // compares identities, and a mismatch sends the request to the open.
    const char* path = fs_path_.file(encoding);
    struct stat st {};
    const bool exists = path && fstatat(root_, path, &st, 0) == 0 && S_ISREG(st.st_mode);
    if (file.absent ? exists : (!exists || FileStamp::of(st) != file.stamp)) {
        cache_.erase(key_, encoding);
        return false;
    }
    return true;
}

// Watches what `path` depends on for `file`, and tells whether the disk
// still shows what the caller found: `expected`, and for a file the same
// one, open as `fd` (st holds the caller's fstat, and then one taken after
// the watches: a change after it is an event). True with file.watched unset
// when it cannot be watched (the caller then stamps the entry).
bool FileRequest::watch_entry(CachedFile& file, const char* path, Walked expected, struct stat& st,
                              int fd) {
    if (!watch_) return true;
    struct stat walked {};
    const std::string root = fd_path(root_);
    const int result = watch_path(*watch_, root, path, file.watch, walked);
    if (result < 0) return true;
    if (result != static_cast<int>(expected)) return false;
    if (expected == Walked::found) {
        if (!S_ISREG(walked.st_mode) || walked.st_dev != st.st_dev || walked.st_ino != st.st_ino)
            return false;
        // inotify hears of a write only through the directory it was made
        // in, and only of writes this kernel makes: a file on a network or
        // FUSE file system, or with several names (a write through a shared
        // mapping is no event, and only a stat sees one made through another
        // name), is checked against the disk at every use instead. A file's
        // own watch hears of a name added later (its link count changes),
        // and of writes through it; it comes after the walk's watches, so a
        // name swapped meanwhile shows in their stamps.
        if (walked.st_nlink > 1 || !inotify_sees_all(root_, path)) return true;
        WatchStamp own;
        if (watch_->watch_file((root + '/' + path).c_str(), own) < 0) return true;
        file.watch.stamps.push_back(own);
        if (fstat(fd, &st) != 0) return false;
        if (st.st_nlink > 1) return true; // a name added before the watch
    }
    file.watched = true;
    return true;
}

bool FileRequest::serve_twin(Encoding encoding) {
    const char* path = fs_path_.file(encoding);
    OwnedFd fd{path ? open_beneath(root_, path, settings_.resolver) : -ENAMETOOLONG};
    struct stat st {};
    if (fd.get() >= 0 && fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
        serve_opened(std::move(fd), st, encoding);
        return true;
    }
    missing_twins_ |= 1u << static_cast<unsigned>(encoding);
    return false;
}

void FileRequest::remember_missing_twins() {
    for (const Encoding encoding : {Encoding::gzip, Encoding::br}) {
        if (!(missing_twins_ & (1u << static_cast<unsigned>(encoding)))) continue;
        const char* path = fs_path_.file(encoding);
        CachedFile absent;
        absent.absent = true;
        struct stat unused {};
        if (path && watch_entry(absent, path, Walked::missing, unused))
            cache_.insert(key_, encoding, std::move(absent));
    }
}

void FileRequest::serve_file() {
    const bool trailing_slash = path_.back() == '/';
    const char* path = fs_path_.file(Encoding::identity);
    if (!path) {
        exchange_.send_error(404);
        return;
    }
    const int opened = open_beneath(root_, path, settings_.resolver);
    if (opened < 0) {
        if (trailing_slash && opened == -ENOENT) return serve_directory();
        return answer_open_error(exchange_, -opened);
    }
    OwnedFd fd{opened};
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return answer_open_error(exchange_, errno);
    if (S_ISDIR(st.st_mode)) {
        // A trailing '/' here means the index name is itself a directory.
        return trailing_slash ? serve_directory()
                              : redirect_to_directory(exchange_, exchange_.path());
    }
    if (!S_ISREG(st.st_mode)) {
        exchange_.send_error(403);
        return;
    }
    serve_opened(std::move(fd), st, Encoding::identity);
}

void FileRequest::serve_opened(OwnedFd fd, const struct stat& opened, Encoding encoding) {
    // Only now, with a file to answer for, are the missing twins worth
    // remembering: a client asking for files that do not exist must not
    // fill the cache.
    if (encoding == Encoding::identity) remember_missing_twins();
    struct stat st = opened;
    CachedFile file;
    bool cache = static_cast<std::uint64_t>(st.st_size) <= kCachedFileMax &&
                 watch_entry(file, fs_path_.file(encoding), Walked::found, st, fd.get());
    if (!file.watched) cache = cache && wall_seconds() - st.st_mtim.tv_sec >= kSettleSeconds;
    const auto size = static_cast<std::uint64_t>(st.st_size);
    file.stamp = FileStamp::of(st);
    file.modified = st.st_mtim.tv_sec;
    file.content_type = content_type();
    file.etag_size = static_cast<std::uint8_t>(format_etag(st, file.etag));
    http::format_http_date(file.modified, file.last_modified);
    if (cache && read_whole(fd.get(), file.body, size)) {
        fd.reset();
        file.head_lines = entity_lines(file, encoding);
        if (CachedFile* stored = cache_.insert(key_, encoding, std::move(file)))
            return respond_from(*stored, encoding);
        // The capacity is far above kCachedFileMax: not reached.
        {
            exchange_.send_error(500);
            return;
        }
    }
    respond({file.content_type, encoding, size, file.modified, file.etag_view(),
             file.last_modified_view(), nullptr, fd.get()});
}

void FileRequest::serve_directory() {
    const char* path = fs_path_.directory();
    const int opened = open_beneath(root_, path, settings_.resolver);
    if (opened < 0) return answer_open_error(exchange_, -opened);
    OwnedFd fd{opened};
    struct stat st {};
    if (fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        exchange_.send_error(404);
        return;
    }
    if (!settings_.listing) {
        exchange_.send_error(403);
        return;
    }
    std::vector<ListingEntry> entries;
    if (const int error = read_listing(fd.release(), entries); error < 0)
        return answer_open_error(exchange_, -error);
    const std::string_view url = exchange_.path();
    std::string child(url);
    std::erase_if(entries, [&](const ListingEntry& entry) {
        if (is_never_served(entry.name)) return true;
        child.resize(url.size());
        child += entry.name;
        return settings_.denies(child);
    });
    const std::string page = render_listing(url, entries);
    exchange_.header("Content-Type", "text/html; charset=utf-8");
    exchange_.send(page);
}

// Inline: its call cost each hit 17 instructions (callgrind, file1k).
inline void FileRequest::respond_from(CachedFile& file, Encoding encoding) {
    const FilePin pin(cache_, file);
    // Most requests want the whole file with no condition: its ready head.
    if (!conditions_.conditional()) {
        exchange_.header_lines(file.head_lines);
        exchange_.send(file.body);
        return;
    }
    respond({file.content_type, encoding, file.body.size(), file.modified, file.etag_view(),
             file.last_modified_view(), file.body.data(), -1, file.head_lines});
}

// The fields respond() sends with a whole file, as lines.
std::string FileRequest::entity_lines(const CachedFile& file, Encoding encoding) const {
    std::string lines;
    const auto add = [&lines](std::string_view name, std::string_view value) {
        lines.append(name).append(": ").append(value).append("\r\n");
    };
    add("Content-Type", file.content_type);
    if (encoding != Encoding::identity) add("Content-Encoding", content_coding(encoding));
    add("Last-Modified", file.last_modified_view());
    add("ETag", file.etag_view());
    if (settings_.precompressed) add("Vary", "Accept-Encoding");
    add("Accept-Ranges", "bytes");
    return lines;
}

void FileRequest::validators(const Representation& r) {
    exchange_.header("Last-Modified", r.last_modified);
    exchange_.header("ETag", r.etag);
    if (settings_.precompressed) exchange_.header("Vary", "Accept-Encoding");
}

void FileRequest::respond(const Representation& r) {
    const Conditions conditions = conditions_.conditions();
    switch (evaluate(conditions, r.etag, r.modified)) {
    case Verdict::precondition_failed: {
        exchange_.send_error(412);
        return;
    }
    case Verdict::not_modified:
        exchange_.status(304);
        validators(r);
        exchange_.send({});
        return;
    case Verdict::proceed:
        break;
    }
    // Range is defined for GET only (RFC 9110 §14.2): a HEAD gets the 200 head.
    RangeRequest ranges;
    if (!conditions.range.empty() && exchange_.request().method == http::Method::get &&
        range_allowed(conditions.if_range, r.etag, r.modified))
        ranges = parse_ranges(conditions.range, r.size);
    if (ranges.kind == RangeRequest::Kind::unsatisfiable) {
        char value[32] = "bytes */";
        const char* end = std::to_chars(value + 8, value + sizeof value, r.size).ptr;
        exchange_.header("Content-Range", {value, static_cast<std::size_t>(end - value)});
        if (settings_.precompressed) exchange_.header("Vary", "Accept-Encoding");
        return send_page(exchange_, 416, "416 Range Not Satisfiable\n");
    }
    if (ranges.kind == RangeRequest::Kind::partial && ranges.count > 1)
        return send_ranges(r, ranges);
    if (!r.head_lines.empty()) {
        exchange_.header_lines(r.head_lines);
    } else {
        exchange_.header("Content-Type", r.content_type);
        if (r.encoding != Encoding::identity)
            exchange_.header("Content-Encoding", content_coding(r.encoding));
        validators(r);
        exchange_.header("Accept-Ranges", "bytes");
    }
    ByteRange range{0, r.size - 1};
    if (ranges.kind == RangeRequest::Kind::partial) {
        range = ranges.ranges[0];
        char value[6 + kContentRangeCapacity] = "bytes ";
        const std::size_t n = 6 + format_content_range(range, r.size, value + 6);
        exchange_.status(206);
        exchange_.header("Content-Range", {value, n});
    }
    if (r.size == 0) {
        exchange_.send({});
    } else if (r.body) {
        exchange_.send({r.body + range.first, range.length()});
    } else {
        exchange_.send_file(r.fd, static_cast<off_t>(range.first), range.length());
    }
}

void FileRequest::send_ranges(const Representation& r, const RangeRequest& ranges) {
    char boundary[kBoundaryLength];
    make_boundary(boundary);
    const Multipart multipart{{boundary, kBoundaryLength}, r.content_type, r.size};
    static constexpr std::string_view kType = "multipart/byteranges; boundary=";
    char type[kType.size() + kBoundaryLength];
    std::memcpy(type, kType.data(), kType.size());
    std::memcpy(type + kType.size(), boundary, kBoundaryLength);

    exchange_.status(206);
    exchange_.header("Content-Type", {type, sizeof type});
    if (r.encoding != Encoding::identity)
        exchange_.header("Content-Encoding", content_coding(r.encoding));
    validators(r);
    exchange_.header("Accept-Ranges", "bytes");
    if (exchange_.begin(multipart.body_length(ranges.ranges, ranges.count)) != 0) return;
    char head[512];
    for (std::uint8_t i = 0; i < ranges.count; ++i) {
        const ByteRange& range = ranges.ranges[i];
        exchange_.write({head, multipart.part_head(range, head, sizeof head)});
        if (r.body)
            exchange_.write({r.body + range.first, range.length()});
        else
            exchange_.write_file(r.fd, static_cast<off_t>(range.first), range.length());
    }
    exchange_.write(multipart.tail(head, sizeof head));
    exchange_.finish();
}

} // namespace

FilesHandler::FilesHandler(std::unique_ptr<State> state, http::Route route)
    : http::Handler(std::move(route)), state_(std::move(state)) {}

FilesHandler::~FilesHandler() = default;

std::string FilesHandler::describe() const {
    return "files from " + state_->paths.source();
}

void FilesHandler::serve(http::Exchange& exchange) const {
    const http::Method method = exchange.request().method;
    if (method != http::Method::get && method != http::Method::head) {
        exchange.header("Allow", "GET, HEAD");
        exchange.send_error(405); // an error page may replace it
        return;
    }
    const std::string_view path = exchange.path();
    const std::optional<std::string_view> local = state_->paths.local(path);
    // A path that names a file here asks the cache before refused()
    // (FileRequest::serve). The others are checked first: they have no
    // entry, or (a directory's path with several index names) choosing the
    // index asks the disk.
    Checks checks = Checks::pending;
    if (!local || local->empty() || (local->back() == '/' && state_->index.size() > 1)) {
        if (refused(*state_, path, local)) {
            exchange.send_error(403);
            return;
        }
        if (!local) {
            exchange.send_error(404);
            return;
        }
        // The alias directory itself, asked without its '/'.
        if (local->empty()) return redirect_to_directory(exchange, path);
        checks = Checks::passed;
    }
    FileRequest(exchange, *state_, loop_files(*state_), *local, checks).serve();
}

} // namespace weft::handlers
