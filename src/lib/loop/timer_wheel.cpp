#include "loop/timer_wheel.hpp"

#include <algorithm>
#include <climits>

namespace weft {

void TimerWheel::Slot::append(Timer& timer) {
    timer.prev = prev;
    timer.next = this;
    prev->next = &timer;
    prev = &timer;
}

template <unsigned N>
unsigned TimerWheel::Level<N>::next_busy(unsigned from) {
    for (unsigned distance = 0; distance < N;) {
        const unsigned index = (from + distance) % N;
        const std::uint64_t word = bits[index / 64] >> (index % 64);
        if (word == 0) {
            // Nothing more in this word: skip to the next word's first slot.
            distance += 64 - index % 64;
            continue;
        }
        const unsigned found = index + unsigned(__builtin_ctzll(word));
        const unsigned found_distance = (found + N - from) % N;
        if (found_distance < distance) break; // wrapped past `from`
        if (!slots[found].empty()) return found_distance;
        unmark(found); // stale
        distance = found_distance + 1;
    }
    return N;
}

TimerWheel::TimerWheel(std::uint64_t now) : clock_(now) {}

void TimerWheel::arm(Timer& timer, std::uint64_t deadline) {
    ++arms_;
    if (timer.armed() && deadline >= timer.deadline) {
        timer.deadline = deadline; // its slot comes no later than this
        return;
    }
    timer.cancel();
    timer.deadline = std::max(deadline, clock_);
    place(timer);
}

void TimerWheel::place(Timer& timer) {
    std::uint64_t delta = timer.deadline - clock_;
    if (delta < kLevel0Slots) {
        const unsigned index = timer.deadline % kLevel0Slots;
        level0_.slots[index].append(timer);
        level0_.mark(index);
        return;
    }
    constexpr std::uint64_t kHorizon = (std::uint64_t{1} << shift_of(kUpperLevels)) - 1;
    if (delta > kHorizon) {
        timer.deadline = clock_ + kHorizon;
        delta = kHorizon;
    }
    int level = 0;
    while (delta >= (std::uint64_t{1} << shift_of(level + 1))) ++level;
    const unsigned index = (timer.deadline >> shift_of(level)) % kLevelSlots;
    upper_[level].slots[index].append(timer);
    upper_[level].mark(index);
}

void TimerWheel::cascade() {
    // Called as level 0 wraps: bring down the upper slot that covers the
    // next 256 ticks, and go on up while levels wrap too.
    for (int level = 0; level < kUpperLevels; ++level) {
        const unsigned index = (clock_ >> shift_of(level)) % kLevelSlots;
        Slot& slot = upper_[level].slots[index];
        upper_[level].unmark(index);
        while (!slot.empty()) {
            Timer& timer = *slot.next;
            timer.cancel();
            place(timer);
        }
        if (index != 0) break;
    }
}

std::size_t TimerWheel::advance(std::uint64_t now) {
    std::size_t fired = 0;
    while (clock_ <= now) {
        const unsigned index = clock_ % kLevel0Slots;
        if (index == 0) cascade();
        Slot& slot = level0_.slots[index];
        level0_.unmark(index);
        ++clock_; // timers armed by the callbacks below land from here on
        if (!slot.empty()) {
            // Move the due list out first, so a callback that re-arms its
            // timer for "now" does not loop here.
            Slot due;
            due.next = slot.next;
            due.prev = slot.prev;
            due.next->prev = &due;
            due.prev->next = &due;
            slot.next = slot.prev = &slot;
            while (!due.empty()) {
                Timer& timer = *due.next;
                timer.cancel();
                if (timer.deadline >= clock_) { // pushed back since it was placed
                    place(timer);
                    continue;
                }
                ++fired;
                timer.fire(timer);
            }
        }
        // Skip the empty ticks up to the next busy slot of this turn of
        // level 0, or to its wrap, where upper slots cascade.
        const unsigned from = clock_ % kLevel0Slots;
        if (from == 0) continue;
        const unsigned distance = level0_.next_busy(from);
        const unsigned to_wrap = kLevel0Slots - from;
        clock_ = std::min(clock_ + std::min(distance, to_wrap), now + 1);
    }
    return fired;
}

std::int64_t TimerWheel::next_timeout(std::uint64_t now) {
    std::uint64_t earliest = UINT64_MAX;
    const unsigned distance0 = level0_.next_busy(clock_ % kLevel0Slots);
    if (distance0 < kLevel0Slots) earliest = clock_ + distance0;
    for (int level = 0; level < kUpperLevels; ++level) {
        // A busy upper slot matters from when it cascades: when the levels
        // below wrap onto it.
        const unsigned shift = shift_of(level);
        const std::uint64_t block = clock_ >> shift;
        const unsigned current = block % kLevelSlots;
        const bool current_cascaded = clock_ % (std::uint64_t{1} << shift) != 0;
        std::uint64_t candidate = UINT64_MAX;
        if (!upper_[level].slots[current].empty()) {
            // Not cascaded yet: due now. Cascaded: armed a whole turn ahead.
            candidate = current_cascaded ? (block + kLevelSlots) << shift : clock_;
        }
        // The search comes round to the current slot last (distance 63):
        // that one is handled above.
        const unsigned distance = upper_[level].next_busy((current + 1) % kLevelSlots);
        if (distance < kLevelSlots - 1) {
            candidate = std::min(candidate, (block + 1 + distance) << shift);
        }
        earliest = std::min(earliest, candidate);
    }
    if (earliest == UINT64_MAX) return -1;
    if (earliest <= now) return 0;
    return static_cast<std::int64_t>(std::min<std::uint64_t>(earliest - now, INT_MAX));
}

} // namespace weft
