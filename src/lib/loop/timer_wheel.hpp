#pragma once
// A hierarchical timer wheel with millisecond ticks: O(1) arm and cancel.
//
// Level 0 has 256 one-millisecond slots; levels 1 to 4 have 64 slots each,
// every slot 64 times wider than one below (256 ms, 16 s, 17 min, 18 h), so
// deadlines reach 2^32 ms (49 days) ahead; later ones are clamped. A slot of a
// higher level is cascaded down when the level below wraps to it. Timers fire
// in deadline order; within one millisecond, in no promised order.
//
// A Timer is an intrusive node that lives wherever its owner does (a
// coroutine's stack, a connection's table entry). It has no destructor, so
// zeroed memory is a valid disarmed timer: its owner cancels it before it
// goes away.

#include <array>
#include <cstdint>

namespace weft {

struct Timer {
    Timer* prev = nullptr; // null while disarmed
    Timer* next = nullptr;
    // Milliseconds, on the wheel's clock. Kept when the timer is cancelled:
    // a connection woken from a park reads the deadline it parked with
    // (empty lines alone do not earn it a new one).
    std::uint64_t deadline = 0;
    void (*fire)(Timer& self) = nullptr;

    bool armed() const { return prev != nullptr; }
    // Disarms; nothing happens to a disarmed timer. O(1).
    void cancel() {
        if (!prev) return;
        prev->next = next;
        next->prev = prev;
        prev = next = nullptr;
    }
};

class TimerWheel {
public:
    explicit TimerWheel(std::uint64_t now);
    TimerWheel(const TimerWheel&) = delete;
    TimerWheel& operator=(const TimerWheel&) = delete;

    // Arms `timer` to fire at `deadline` (re-arms an armed one). A deadline
    // already passed fires at the next tick the wheel processes. A later
    // deadline for an armed timer costs a store: the timer stays in its slot,
    // and when the wheel comes to it there, it moves on to its deadline
    // instead of firing (a connection's timeout is pushed back at every
    // request, and would otherwise be unlinked and placed every time).
    void arm(Timer& timer, std::uint64_t deadline);

    // Fires every timer due at or before `now`, in deadline order; returns how
    // many fired (a timer whose deadline arm() pushed back moves on instead). A fire callback may
    // arm and cancel timers, itself included.
    std::size_t advance(std::uint64_t now);

    // Milliseconds from `now` until the wheel next has work: 0 if something is
    // due, -1 if nothing is armed. A timer on an upper level counts from when
    // its slot cascades, so this may wake early, never late.
    std::int64_t next_timeout(std::uint64_t now);

    // The next tick the wheel will process.
    std::uint64_t clock() const { return clock_; }
    // How many times arm() was called: tests check that a wait armed none.
    std::uint64_t arms() const { return arms_; }

private:
    static constexpr int kLevel0Bits = 8;
    static constexpr int kLevelBits = 6;
    static constexpr int kUpperLevels = 4;
    static constexpr unsigned kLevel0Slots = 1u << kLevel0Bits;
    static constexpr unsigned kLevelSlots = 1u << kLevelBits;

    // A slot's list head: a node that is never armed by anyone.
    struct Slot : Timer {
        Slot() { prev = next = this; }
        bool empty() const { return next == this; }
        void append(Timer& timer);
    };
    template <unsigned N>
    struct Level {
        std::array<Slot, N> slots;
        // A bit per slot that may hold timers; cancel does not clear it (it
        // does not know the wheel), so a set bit over an empty slot is stale
        // and cleared when found.
        std::array<std::uint64_t, (N + 63) / 64> bits{};
        void mark(unsigned index) { bits[index / 64] |= std::uint64_t{1} << (index % 64); }
        void unmark(unsigned index) { bits[index / 64] &= ~(std::uint64_t{1} << (index % 64)); }
        // The first slot at or after `from` (circularly) that holds timers,
        // as a distance from `from`; N if none.
        unsigned next_busy(unsigned from);
    };

    static constexpr unsigned shift_of(int upper) {
        return kLevel0Bits + kLevelBits * unsigned(upper);
    }
    void place(Timer& timer);
    void cascade();

    std::uint64_t clock_;
    std::uint64_t arms_ = 0;
    Level<kLevel0Slots> level0_;
    std::array<Level<kLevelSlots>, kUpperLevels> upper_;
};

} // namespace weft
