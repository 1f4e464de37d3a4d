#include "handlers/files/cache.hpp"

#include "util/words.hpp"

#include <cstring>

namespace weft::handlers {
namespace {

constexpr std::size_t kInitialSlots = 64;

using words::load16;
using words::load32;
using words::load64;

// 1 to 7 bytes as one number, from two loads that overlap: every byte is in
// it, so two runs of the same length are equal exactly when their numbers
// are. No call: a memcpy of a variable length cost hash_of 14 of its 46
// instructions a request on file1k.
std::uint64_t tail_of(const char* p, std::size_t n) {
    if (n >= 4) return load32(p) | std::uint64_t{load32(p + n - 4)} << 32;
    if (n >= 2) return load16(p) | std::uint64_t{load16(p + n - 2)} << 16;
    return static_cast<unsigned char>(p[0]);
}

// Word at a time: request paths are short, and the keys are the site's own
// files, not chosen by clients (negative entries are made only for twins
// of files that exist). Inline: its call cost find() 8 instructions.
inline std::uint64_t hash_of(std::string_view path, Encoding encoding) {
    constexpr std::uint64_t kMultiplier = 0x9e3779b97f4a7c15u;
    std::uint64_t h = (path.size() << 8) ^ static_cast<std::uint64_t>(encoding);
    const auto mix = [&h](std::uint64_t word) {
        h = (h ^ word) * kMultiplier;
        h ^= h >> 32;
    };
    std::size_t i = 0;
    for (; i + 8 <= path.size(); i += 8) mix(load64(path.data() + i));
    if (i < path.size()) mix(tail_of(path.data() + i, path.size() - i));
    return h * kMultiplier;
}

// Whether two keys are the same, compared in words (the last one
// overlapping the one before): keys are short, and memcmp's call cost more
// than the comparison.
bool same_key(std::string_view a, std::string_view b) {
    const std::size_t n = a.size();
    if (n != b.size()) return false;
    if (n < 8) return n == 0 || tail_of(a.data(), n) == tail_of(b.data(), n);
    for (std::size_t i = 0;; i += 8) {
        if (i + 8 > n) i = n - 8;
        if (load64(a.data() + i) != load64(b.data() + i)) return false;
        if (i + 8 == n) return true;
    }
}

} // namespace

FileStamp FileStamp::of(const struct stat& st) {
    return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
            static_cast<std::uint64_t>(st.st_size),
            static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
            static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

FileCache::FileCache(std::size_t capacity) : capacity_(capacity), slots_(kInitialSlots) {}

std::size_t FileCache::slot_of(std::string_view path, Encoding encoding, std::uint64_t hash) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
        const CachedFile* file = slots_[i].get();
        if (!file ||
            (file->hash_ == hash && file->encoding_ == encoding && same_key(file->path_, path)))
            return i;
    }
}

CachedFile* FileCache::find(std::string_view path, Encoding encoding) {
    CachedFile* file = slots_[slot_of(path, encoding, hash_of(path, encoding))].get();
    if (!file || newest_ == file) return file;
    unlink(file);
    link_newest(file);
    return file;
}

CachedFile* FileCache::insert(std::string_view path, Encoding encoding, CachedFile&& file) {
    const std::size_t cost = file.body.size() + path.size() + kEntryOverhead;
    erase(path, encoding);
    if (cost > capacity_) return nullptr;
    while (bytes_ + cost > capacity_) {
        const CachedFile* old = oldest_;
        erase_slot(slot_of(old->path_, old->encoding_, old->hash_));
    }
    if ((count_ + 1) * 2 > slots_.size()) grow();
    auto stored = std::make_unique<CachedFile>(std::move(file));
    stored->path_ = path;
    stored->encoding_ = encoding;
    stored->hash_ = hash_of(path, encoding);
    stored->cost_ = cost;
    link_newest(stored.get());
    bytes_ += cost;
    ++count_;
    std::unique_ptr<CachedFile>& slot = slots_[slot_of(path, encoding, stored->hash_)];
    slot = std::move(stored);
    return slot.get();
}

void FileCache::erase(std::string_view path, Encoding encoding) {
    const std::size_t slot = slot_of(path, encoding, hash_of(path, encoding));
    if (slots_[slot]) erase_slot(slot);
}

void FileCache::clear() {
    while (oldest_) erase_slot(slot_of(oldest_->path_, oldest_->encoding_, oldest_->hash_));
}

void FileCache::erase_slot(std::size_t slot) {
    CachedFile* file = slots_[slot].get();
    unlink(file);
    bytes_ -= file->cost_;
    --count_;
    if (file->pins_) {
        file->retired_ = true;
        retired_.push_back(std::move(slots_[slot]));
    }
    slots_[slot].reset();
    // Backward shift: pull later entries of the probe run into the hole
    // unless their home slot lies after it, so no lookup stops early.
    const std::size_t mask = slots_.size() - 1;
    std::size_t hole = slot;
    for (std::size_t i = (slot + 1) & mask; slots_[i]; i = (i + 1) & mask) {
        const std::size_t home = slots_[i]->hash_ & mask;
        const bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
        if (!stays) {
            slots_[hole] = std::move(slots_[i]);
            hole = i;
        }
    }
}

void FileCache::free_retired(CachedFile& file) {
    std::erase_if(retired_, [&](const std::unique_ptr<CachedFile>& f) { return f.get() == &file; });
}

void FileCache::unlink(CachedFile* file) {
    (file->newer_ ? file->newer_->older_ : newest_) = file->older_;
    (file->older_ ? file->older_->newer_ : oldest_) = file->newer_;
}

void FileCache::link_newest(CachedFile* file) {
    file->newer_ = nullptr;
    file->older_ = newest_;
    (newest_ ? newest_->newer_ : oldest_) = file;
    newest_ = file;
}

void FileCache::grow() {
    std::vector<std::unique_ptr<CachedFile>> old(slots_.size() * 2);
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (std::unique_ptr<CachedFile>& file : old) {
        if (!file) continue;
        std::size_t i = file->hash_ & mask;
        while (slots_[i]) i = (i + 1) & mask;
        slots_[i] = std::move(file);
    }
}

} // namespace weft::handlers
