#pragma once
// What each client address has taken of the limits (`limit_conn`,
// `limit_rate`): one table for the whole server, shared by every loop, a
// fixed number of entries chosen at load (`limit_table`), nothing allocated
// after that.
//
// An entry is a client's state under one limit (a site's or a handler's:
// each has an id): its requests in progress and its rate bucket's excess.
// The table is set-associative: a key hashes to a set of up to 8 entries
// behind one spinlock, held for a scan of those 8 and a few additions, so
// loops seldom meet on it and never for long. A key not in its set takes a
// free entry, or one that holds nothing any more (no request in progress,
// its excess drained); with none, the set is full and the request is
// refused (nginx's zone answers 503 too, once it could not free a node).
//
// Keys: an IPv4 address whole; an IPv6 address by its /64, what one host or
// one customer is given (RFC 6177), so a client cannot take a fresh budget,
// nor fill the table, by walking its own addresses. Unix-socket and unknown
// clients are not limited (nginx does not account an empty key either).
//
// Time is the caller's, in milliseconds (the loop's clock): every function
// is pure arithmetic on the table, tested without a loop.

#include "util/cidr.hpp"
#include "util/rate_limit.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace weft {

class LimitTable {
public:
    static constexpr std::size_t kWays = 8;
    static constexpr std::size_t kMaxEntries = std::size_t{1} << 24;

    // `entries` rounded up to a power of two, at most kMaxEntries.
    explicit LimitTable(std::size_t entries);
    LimitTable(const LimitTable&) = delete;
    LimitTable& operator=(const LimitTable&) = delete;

    std::size_t capacity() const { return mask_ + 1; }

    // A new limit's id, with its rate (off: it counts only connections).
    // Only while the table is built, before any loop uses it; 0 once
    // 65535 ids are taken.
    std::uint16_t add_limit(const RateLimit& rate);

    // Whether `address` is keyed at all (IPv4 and IPv6 are).
    static bool limited(const IpAddress& address) {
        return address.family == IpAddress::Family::ipv4 ||
               address.family == IpAddress::Family::ipv6;
    }

    enum class Outcome : std::uint8_t { admitted, over_limit, table_full };

    struct RateVerdict {
        Outcome outcome;
        // admitted: how long the request waits (its excess drained; 0 for
        // `nodelay`); over_limit: how long until one is admitted again.
        std::uint32_t wait_ms;
    };
    // One request of `address` under limit `id`'s rate, at `now_ms`. A
    // refused request leaves the bucket as it was (as nginx's).
    RateVerdict take_request(const IpAddress& address, std::uint16_t id, std::uint64_t now_ms);

    struct Hold {
        Outcome outcome;
        std::uint32_t entry; // admitted: what release() takes
    };
    // One more request of `address` in progress under limit `id`, unless
    // `max` are.
    Hold acquire(const IpAddress& address, std::uint16_t id, std::uint32_t max,
                 std::uint64_t now_ms);
    // The request acquire() admitted has ended. An entry with a request in
    // progress is never reused, so `entry` is still the address's.
    void release(std::uint32_t entry);

    // Entries holding a key (tests, diagnostics): a scan, under each lock.
    std::size_t used(std::uint64_t now_ms);

private:
    // 32 bytes, two to a cache line.
    struct Entry {
        std::uint64_t key[2]; // the address (IPv4: ::ffff:a.b.c.d; IPv6: its /64)
        std::uint64_t stamp;  // when the excess was last set, ms
        std::uint32_t excess; // milli-requests
        std::uint16_t conns;  // requests in progress
        std::uint16_t limit;  // its limit's id; 0: free
    };
    static_assert(sizeof(Entry) == 32, "two entries to a cache line");

    struct alignas(64) Lock {
        std::atomic<bool> held{false};
    };

    // The entry of (address, id), found or taken (find_or_take), with its
    // set locked while this lives; entry nullptr when the set is full.
    class Locked {
    public:
        Locked(LimitTable& table, const IpAddress& address, std::uint16_t id, std::uint64_t now_ms);
        Locked(const Locked&) = delete;
        Locked& operator=(const Locked&) = delete;
        ~Locked() { table_.unlock(set_); }

        Entry* entry = nullptr;
        bool fresh = false;

    private:
        LimitTable& table_;
        std::size_t set_;
    };

    // Locks the set of (key, id) and returns its index; unlock() after.
    std::size_t lock_set(const std::uint64_t key[2], std::uint16_t id);
    void unlock(std::size_t set) { locks_[set].held.store(false, std::memory_order_release); }
    void lock(std::size_t set);
    // The entry for (key, id) in locked `set`, a fresh one for it if none
    // (`fresh`: excess 0, stamp now), or nullptr when the set has no room.
    Entry* find_or_take(std::size_t set, const std::uint64_t key[2], std::uint16_t id,
                        std::uint64_t now_ms, bool& fresh);
    // The entry's excess plus `added`, drained to `now_ms` (not below 0).
    std::uint64_t excess_at(const Entry& entry, std::uint64_t now_ms,
                            std::uint32_t added = 0) const;
    // Whether the entry holds nothing a fresh one would not: no request in
    // progress, and its bucket drained a whole request past empty (a fresh
    // entry admits one at once).
    bool idle(const Entry& entry, std::uint64_t now_ms) const;

    std::size_t mask_;
    std::size_t ways_;
    std::uint64_t seed_;
    std::unique_ptr<Entry[]> entries_;
    std::unique_ptr<Lock[]> locks_;
    std::vector<RateLimit> rates_; // by id; [0] unused
};

} // namespace weft
