#pragma once
// A handler's state on this thread's loop (its cache, its view of the root),
// made on first use. Handlers are shared by every loop, so what one loop
// keeps for a handler is found by the handler's id; `alive` expires with the
// handler (a reload), and states of handlers that are gone are dropped when
// the thread next meets a new one.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace weft::handlers {

template <class State, class... Args>
State& per_loop(std::uint64_t id, const std::shared_ptr<const bool>& alive, Args&&... args) {
    struct Slot {
        std::uint64_t id;
        std::weak_ptr<const bool> alive;
        std::unique_ptr<State> state;
    };
    thread_local std::vector<Slot> slots;
    for (Slot& slot : slots)
        if (slot.id == id) return *slot.state;
    std::erase_if(slots, [](const Slot& slot) { return slot.alive.expired(); });
    slots.push_back({id, alive, std::make_unique<State>(std::forward<Args>(args)...)});
    return *slots.back().state;
}

} // namespace weft::handlers
