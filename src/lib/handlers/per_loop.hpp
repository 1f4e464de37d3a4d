#pragma once
// A handler's state on this thread's loop (its cache, its view of the root),
// made on first use. Handlers are shared by every loop, so what one loop
// keeps for a handler is found by the handler's id; `alive` expires with the
// handler (a reload), and states of handlers that are gone are dropped when
// the thread next meets a new one.
//
// Ids start at 1 and are never reused, and a state is dropped only once its
// handler is gone, so the last one found is remembered: a loop's requests
// mostly go to one handler of a kind (callgrind: the search cost the files
// handler 29 instructions a request, PHP's scripts 12).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace weft::handlers {

// This thread's states of one kind: one table per State, whatever the
// arguments its makers pass (a table in per_loop itself would be one per
// instantiation, so two callers passing different argument types would
// each make a state of their own for the same handler).
template <class State>
struct PerLoopTable {
    struct Slot {
        std::uint64_t id;
        std::weak_ptr<const bool> alive;
        std::unique_ptr<State> state;
    };
    static inline thread_local std::vector<Slot> slots;
    static inline thread_local std::uint64_t last_id = 0;
    static inline thread_local State* last = nullptr;
};

template <class State, class... Args>
State& per_loop(std::uint64_t id, const std::shared_ptr<const bool>& alive, Args&&... args) {
    using Table = PerLoopTable<State>;
    if (id == Table::last_id) [[likely]]
        return *Table::last;
    State* found = nullptr;
    for (auto& slot : Table::slots) {
        if (slot.id == id) {
            found = slot.state.get();
            break;
        }
    }
    if (!found) {
        // Forgotten first: the remembered state may go below, and a State
        // that throws as it is made leaves nothing remembered.
        Table::last_id = 0;
        Table::last = nullptr;
        std::erase_if(Table::slots, [](const auto& slot) { return slot.alive.expired(); });
        Table::slots.push_back({id, alive, std::make_unique<State>(std::forward<Args>(args)...)});
        found = Table::slots.back().state.get();
    }
    Table::last = found;
    Table::last_id = id;
    return *found;
}

} // namespace weft::handlers
