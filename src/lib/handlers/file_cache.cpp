#include "handlers/file_cache.hpp"

#include <functional>

namespace weft::handlers {

FileStamp FileStamp::of(const struct stat& st) {
    return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
            static_cast<std::uint64_t>(st.st_size),
            static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

std::size_t FileCache::Hash::operator()(const KeyView& k) const {
    return std::hash<std::string_view>{}(k.path) ^ static_cast<std::size_t>(k.encoding);
}

CachedFile* FileCache::find(std::string_view path, Encoding encoding) {
    const auto it = files_.find(KeyView{path, encoding});
    if (it == files_.end()) return nullptr;
    CachedFile& file = it->second;
    if (newest_ != &file) {
        unlink(file);
        link_newest(file);
    }
    return &file;
}

CachedFile* FileCache::insert(std::string_view path, Encoding encoding, CachedFile&& file) {
    const std::size_t cost = file.body.size() + path.size() + kEntryOverhead;
    erase(path, encoding);
    if (cost > capacity_) return nullptr;
    while (bytes_ + cost > capacity_)
        erase(files_.find(KeyView{oldest_->key_->path, oldest_->key_->encoding}));
    const auto it = files_.emplace(Key{std::string(path), encoding}, std::move(file)).first;
    CachedFile& stored = it->second;
    stored.key_ = &it->first;
    stored.cost_ = cost;
    bytes_ += cost;
    link_newest(stored);
    return &stored;
}

void FileCache::erase(std::string_view path, Encoding encoding) {
    const auto it = files_.find(KeyView{path, encoding});
    if (it != files_.end()) erase(it);
}

void FileCache::erase(Map::iterator it) {
    unlink(it->second);
    bytes_ -= it->second.cost_;
    files_.erase(it);
}

void FileCache::unlink(CachedFile& file) {
    (file.newer_ ? file.newer_->older_ : newest_) = file.older_;
    (file.older_ ? file.older_->newer_ : oldest_) = file.newer_;
    file.newer_ = file.older_ = nullptr;
}

void FileCache::link_newest(CachedFile& file) {
    file.newer_ = nullptr;
    file.older_ = newest_;
    (newest_ ? newest_->newer_ : oldest_) = &file;
    newest_ = &file;
}

} // namespace weft::handlers
