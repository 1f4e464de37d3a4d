#pragma once
// Deferred calls of a coroutine: run last-in first-out when it ends or is
// destroyed, each disarmable. Small trivially copyable callables (a function
// pointer and an argument, or a lambda capturing two pointers) are stored in
// place; the first few entries need no allocation.

#include <cassert>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace weft {

struct DeferId {
    std::uint32_t index;
};

class DeferList {
public:
    static constexpr std::size_t kCapture = 2 * sizeof(void*);
    static constexpr std::size_t kInline = 4;

    template <class F>
    requires std::is_invocable_v<F&> && std::is_trivially_copyable_v<F> DeferId push(F fn) {
        static_assert(sizeof(F) <= kCapture && alignof(F) <= alignof(void*),
                      "a deferred callable holds at most two pointers");
        Entry entry;
        entry.thunk = [](void* storage) { (*static_cast<F*>(storage))(); };
        std::memcpy(entry.storage, &fn, sizeof(F));
        if (count_ < kInline) {
            inline_[count_] = entry;
        } else {
            spill_.push_back(entry);
        }
        return DeferId{count_++};
    }

    DeferId push(void (*fn)(void*), void* arg) {
        return push([fn, arg] { fn(arg); });
    }

    void disarm(DeferId id) {
        assert(id.index < count_);
        at(id.index).armed = false;
    }

    // Runs and removes every armed entry, newest first; entries pushed while
    // running are run too.
    void run_all() {
        while (count_ > 0) {
            Entry entry = at(count_ - 1);
            if (--count_ >= kInline) spill_.pop_back();
            if (entry.armed) entry.thunk(entry.storage);
        }
    }

    std::uint32_t size() const { return count_; }

private:
    struct Entry {
        void (*thunk)(void* storage);
        alignas(void*) unsigned char storage[kCapture];
        bool armed = true;
    };

    Entry& at(std::uint32_t index) {
        return index < kInline ? inline_[index] : spill_[index - kInline];
    }

    Entry inline_[kInline];
    std::uint32_t count_ = 0;
    std::vector<Entry> spill_;
};

} // namespace weft
