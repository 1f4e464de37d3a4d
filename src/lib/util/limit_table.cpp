#include "util/limit_table.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <random>

namespace weft {

namespace {

constexpr std::uint64_t kMsPerMinute = 60'000;
constexpr std::uint32_t kOneRequest = 1000; // milli-requests

// The table's key of an address (limited() ones only).
void key_of(const IpAddress& address, std::uint64_t key[2]) {
    std::uint64_t high = 0;
    std::memcpy(&high, address.bytes, 8);
    if (address.family == IpAddress::Family::ipv6) {
        key[0] = high; // its /64
        key[1] = 0;
        return;
    }
    std::uint32_t v4 = 0;
    std::memcpy(&v4, address.bytes, 4);
    key[0] = 0;
    key[1] = (std::uint64_t{0xffff} << 32) | v4; // as ::ffff:a.b.c.d, apart from every /64
}

std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void pause() {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Milliseconds for `rate` (milli-requests a minute) to drain `amount`,
// rounded up.
std::uint64_t drain_ms(std::uint64_t amount, std::uint64_t rate) {
    return (amount * kMsPerMinute + rate - 1) / rate;
}

} // namespace

LimitTable::LimitTable(std::size_t entries)
    : mask_(std::bit_ceil(std::clamp<std::size_t>(entries, 1, kMaxEntries)) - 1),
      ways_(std::min(kWays, mask_ + 1)), seed_(std::random_device{}()),
      entries_(std::make_unique<Entry[]>(mask_ + 1)),
      locks_(std::make_unique<Lock[]>((mask_ + 1) / ways_)), rates_(1) {
    seed_ = (seed_ << 32) ^ std::random_device{}();
}

std::uint16_t LimitTable::add_limit(const RateLimit& rate) {
    if (rates_.size() > UINT16_MAX) return 0;
    rates_.push_back(rate);
    return static_cast<std::uint16_t>(rates_.size() - 1);
}

void LimitTable::lock(std::size_t set) {
    std::atomic<bool>& held = locks_[set].held;
    while (held.exchange(true, std::memory_order_acquire))
        while (held.load(std::memory_order_relaxed)) pause();
}

std::size_t LimitTable::lock_set(const std::uint64_t key[2], std::uint16_t id) {
    // The seed goes into every bit of the key: an IPv4 key is all key[1]
    // (key[0] is 0), and mix(key[1]) XORed with a seeded constant would put
    // the same addresses in one set in every process.
    const std::uint64_t hash = mix(mix(key[0] ^ seed_) ^ key[1] ^ (std::uint64_t{id} << 48));
    const std::size_t set = static_cast<std::size_t>(hash) & (mask_ / ways_);
    lock(set);
    return set;
}

std::uint64_t LimitTable::excess_at(const Entry& entry, std::uint64_t now_ms,
                                    std::uint32_t added) const {
    const std::uint64_t rate = rates_[entry.limit].per_minute;
    const std::uint64_t total = std::uint64_t{entry.excess} + added;
    if (total == 0 || rate == 0) return total;
    const std::uint64_t elapsed = now_ms > entry.stamp ? now_ms - entry.stamp : 0;
    // Past this, all drained; below it, elapsed * rate stays under
    // total * 60000 (< 2^46): no overflow.
    if (elapsed >= drain_ms(total, rate)) return 0;
    return total - elapsed * rate / kMsPerMinute;
}

bool LimitTable::idle(const Entry& entry, std::uint64_t now_ms) const {
    return entry.conns == 0 &&
           (rates_[entry.limit].off() || excess_at(entry, now_ms, kOneRequest) == 0);
}

LimitTable::Entry* LimitTable::find_or_take(std::size_t set, const std::uint64_t key[2],
                                            std::uint16_t id, std::uint64_t now_ms, bool& fresh) {
    Entry* const first = &entries_[set * ways_];
    Entry* const last = first + ways_;
    Entry* spare = nullptr;
    for (Entry* e = first; e != last; ++e) {
        if (e->limit == id && e->key[0] == key[0] && e->key[1] == key[1]) {
            fresh = false;
            return e;
        }
        if (!spare && e->limit == 0) spare = e;
    }
    // No free entry: one whose client holds nothing any more.
    for (Entry* e = first; !spare && e != last; ++e)
        if (idle(*e, now_ms)) spare = e;
    if (!spare) return nullptr;
    *spare = Entry{{key[0], key[1]}, now_ms, 0, 0, id};
    fresh = true;
    return spare;
}

LimitTable::Locked::Locked(LimitTable& table, const IpAddress& address, std::uint16_t id,
                           std::uint64_t now_ms)
    : table_(table) {
    std::uint64_t key[2];
    key_of(address, key);
    set_ = table.lock_set(key, id);
    entry = table.find_or_take(set_, key, id, now_ms, fresh);
}

LimitTable::RateVerdict LimitTable::take_request(const IpAddress& address, std::uint16_t id,
                                                 std::uint64_t now_ms) {
    if (id == 0 || id >= rates_.size() || rates_[id].off() || !limited(address))
        return {Outcome::admitted, 0};
    const RateLimit& rate = rates_[id];
    const Locked locked(*this, address, id, now_ms);
    Entry* const entry = locked.entry;
    if (!entry) return {Outcome::table_full, 1000};
    // As nginx's: a new client starts at excess 0 (admitted at once,
    // whatever the burst); after that each request adds one to what has
    // not drained yet, and may use the drain beyond zero up to that one.
    const std::uint64_t next = locked.fresh ? 0 : excess_at(*entry, now_ms, kOneRequest);
    const std::uint64_t room = std::uint64_t{rate.burst} * kOneRequest;
    if (next > room) {
        // Admitted once the drain since the stamp covers all but `room`.
        const std::uint64_t total = std::uint64_t{entry->excess} + kOneRequest;
        const std::uint64_t elapsed = now_ms > entry->stamp ? now_ms - entry->stamp : 0;
        const std::uint64_t wait = drain_ms(total - room, rate.per_minute) - elapsed;
        return {Outcome::over_limit,
                static_cast<std::uint32_t>(std::clamp<std::uint64_t>(wait, 1, UINT32_MAX))};
    }
    entry->excess = static_cast<std::uint32_t>(next);
    entry->stamp = now_ms;
    const std::uint64_t wait = rate.nodelay ? 0 : next * kMsPerMinute / rate.per_minute;
    return {Outcome::admitted,
            static_cast<std::uint32_t>(std::min<std::uint64_t>(wait, UINT32_MAX))};
}

LimitTable::Hold LimitTable::acquire(const IpAddress& address, std::uint16_t id, std::uint32_t max,
                                     std::uint64_t now_ms) {
    const Locked locked(*this, address, id, now_ms);
    Entry* const entry = locked.entry;
    if (!entry) return {Outcome::table_full, 0};
    if (entry->conns >= max || entry->conns == UINT16_MAX) return {Outcome::over_limit, 0};
    ++entry->conns;
    return {Outcome::admitted, static_cast<std::uint32_t>(entry - entries_.get())};
}

void LimitTable::release(std::uint32_t index) {
    const std::size_t set = index / ways_;
    lock(set);
    Entry& entry = entries_[index];
    assert(entry.conns > 0);
    if (entry.conns > 0) --entry.conns;
    unlock(set);
}

std::size_t LimitTable::used(std::uint64_t now_ms) {
    std::size_t count = 0;
    for (std::size_t set = 0; set <= mask_ / ways_; ++set) {
        lock(set);
        for (std::size_t i = set * ways_; i < (set + 1) * ways_; ++i)
            count += entries_[i].limit != 0 && !idle(entries_[i], now_ms);
        unlock(set);
    }
    return count;
}

} // namespace weft
