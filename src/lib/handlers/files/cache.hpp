#pragma once
// Small files kept in memory, per loop: a hit answers from here with no
// open, fstat or read. Each FileCache belongs to one thread and one handler;
// entries are keyed by the path the handler gives (the request's beneath the
// root, handler.cpp: cache_key()) and the encoding sent, and the least
// recently used go first when the bytes would exceed the capacity.

#include "handlers/files/conditions.hpp"
#include "handlers/files/encoding.hpp"
#include "handlers/files/path_watch.hpp"
#include "http/date.hpp"

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weft::handlers {

// What identifies one version of a file, for entries that could not be
// watched: when any of it changes, a cached copy is stale. The change time
// moves with every write, even one that puts the modification time back.
struct FileStamp {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    static FileStamp of(const struct stat& st);
    bool operator==(const FileStamp&) const = default;
};

// A file's bytes and ready-made validators, or the knowledge that a
// precompressed twin is missing (`absent`).
struct CachedFile {
    bool absent = false;
    FileStamp stamp;
    std::time_t modified = 0;
    std::string body;
    std::string_view content_type; // static (the MIME table)
    std::uint8_t etag_size = 0;
    char etag[kEtagCapacity];
    char last_modified[http::kHttpDateLength];
    // What the path depends on (path_watch.hpp). An entry that could not be
    // watched is checked against the disk (its stamp) at every use instead.
    bool watched = false;
    PathWatch watch;
    // The fields of a whole-file 200 from this entry, made when it is
    // stored: one copy per response instead of six formatted fields.
    std::string head_lines;

    std::string_view etag_view() const { return {etag, etag_size}; }
    std::string_view last_modified_view() const { return {last_modified, http::kHttpDateLength}; }

private:
    friend class FileCache;
    std::string path_; // the key, with encoding_
    Encoding encoding_ = Encoding::identity;
    std::uint64_t hash_ = 0;
    std::size_t cost_ = 0;
    std::uint32_t pins_ = 0; // responses being sent from this entry
    bool retired_ = false;   // out of the table, freed at the last unpin
    CachedFile* newer_ = nullptr;
    CachedFile* older_ = nullptr;
};

class FileCache {
public:
    // Bookkeeping counted against the capacity for each entry, besides its
    // body and key: a negative entry is small, but not free.
    static constexpr std::size_t kEntryOverhead = 256;

    explicit FileCache(std::size_t capacity);
    FileCache(const FileCache&) = delete;
    FileCache& operator=(const FileCache&) = delete;

    // The entry, made the most recently used; nullptr when there is none.
    CachedFile* find(std::string_view path, Encoding encoding);
    // Stores `file` (replacing an entry under the same key), evicting the
    // least recently used to make room; nullptr when it alone exceeds the
    // capacity.
    CachedFile* insert(std::string_view path, Encoding encoding, CachedFile&& file);
    void erase(std::string_view path, Encoding encoding);
    // Every entry out (pinned ones stay until unpinned).
    void clear();

    // A response sent from an entry may wait for the socket, and meanwhile
    // another request on this loop may replace or evict the entry: a pinned
    // entry leaves the table as usual but its memory stays until unpinned.
    void pin(CachedFile& file) { ++file.pins_; }
    void unpin(CachedFile& file) {
        if (--file.pins_ == 0 && file.retired_) free_retired(file);
    }

    std::size_t bytes() const { return bytes_; }
    std::size_t size() const { return count_; }
    std::size_t retired() const { return retired_.size(); }

private:
    // Open addressing with linear probing, at most half full: a lookup is a
    // hash of the path, then usually one slot.
    std::size_t slot_of(std::string_view path, Encoding encoding, std::uint64_t hash) const;
    void erase_slot(std::size_t slot);
    void free_retired(CachedFile& file);
    void grow();
    // The recency list, newest to oldest.
    void unlink(CachedFile* file);
    void link_newest(CachedFile* file);

    std::size_t capacity_;
    std::size_t bytes_ = 0;
    std::size_t count_ = 0;
    std::vector<std::unique_ptr<CachedFile>> slots_;
    std::vector<std::unique_ptr<CachedFile>> retired_; // erased while pinned
    CachedFile* newest_ = nullptr;
    CachedFile* oldest_ = nullptr;
};

// Pins an entry for a scope: unpinned however the scope ends (a coroutine
// destroyed while it waits is unwound).
class FilePin {
public:
    FilePin(FileCache& cache, CachedFile& file) : cache_(cache), file_(file) { cache.pin(file); }
    ~FilePin() { cache_.unpin(file_); }
    FilePin(const FilePin&) = delete;
    FilePin& operator=(const FilePin&) = delete;

private:
    FileCache& cache_;
    CachedFile& file_;
};

} // namespace weft::handlers
