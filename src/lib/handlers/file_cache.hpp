#pragma once
// Small files kept in memory, per loop: a hit answers from here with no
// open, fstat or read. Each FileCache belongs to one thread and one handler;
// entries are keyed by the request's normalised path and the encoding sent,
// and the least recently used go first when the bytes would exceed the
// capacity.

#include "handlers/file_conditions.hpp"
#include "handlers/file_encoding.hpp"
#include "http/date.hpp"

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <unordered_map>

namespace weft::handlers {

// What identifies one version of a file: when any of it changes, a cached
// copy is stale.
struct FileStamp {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    static FileStamp of(const struct stat& st);
    bool operator==(const FileStamp&) const = default;
};

// An entry's key: a normalised request path and the encoding sent for it.
struct FileKey {
    std::string path;
    Encoding encoding;
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
    std::uint64_t checked_ms = 0; // when the disk last agreed with this entry

    std::string_view etag_view() const { return {etag, etag_size}; }
    std::string_view last_modified_view() const { return {last_modified, http::kHttpDateLength}; }

private:
    friend class FileCache;
    CachedFile* newer_ = nullptr;
    CachedFile* older_ = nullptr;
    const FileKey* key_ = nullptr; // in the map's node, which does not move
    std::size_t cost_ = 0;
};

class FileCache {
public:
    // Bookkeeping counted against the capacity for each entry, besides its
    // body and key: a negative entry is small, but not free.
    static constexpr std::size_t kEntryOverhead = 256;

    explicit FileCache(std::size_t capacity) : capacity_(capacity) {}
    FileCache(const FileCache&) = delete;
    FileCache& operator=(const FileCache&) = delete;

    // The entry, made the most recently used; nullptr when there is none.
    CachedFile* find(std::string_view path, Encoding encoding);
    // Stores `file` (replacing an entry under the same key), evicting the
    // least recently used to make room; nullptr when it alone exceeds the
    // capacity.
    CachedFile* insert(std::string_view path, Encoding encoding, CachedFile&& file);
    void erase(std::string_view path, Encoding encoding);

    std::size_t bytes() const { return bytes_; }
    std::size_t size() const { return files_.size(); }

private:
    using Key = FileKey;
    struct KeyView {
        std::string_view path;
        Encoding encoding;
    };
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(const KeyView& k) const;
        std::size_t operator()(const Key& k) const { return (*this)(KeyView{k.path, k.encoding}); }
    };
    struct Equal {
        using is_transparent = void;
        template <class A, class B>
        bool operator()(const A& a, const B& b) const {
            return a.encoding == b.encoding && std::string_view(a.path) == std::string_view(b.path);
        }
    };
    using Map = std::unordered_map<Key, CachedFile, Hash, Equal>;

    void unlink(CachedFile& file);
    void link_newest(CachedFile& file);
    void erase(Map::iterator it);

    std::size_t capacity_;
    std::size_t bytes_ = 0;
    Map files_;
    CachedFile* newest_ = nullptr;
    CachedFile* oldest_ = nullptr;
};

} // namespace weft::handlers
