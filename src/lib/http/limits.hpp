#pragma once
// limit_conn and limit_rate as a handler carries them, and one request's
// passage through them (docs/architecture.md, "Limits per client").
//
// Checked before the access rules and auth_basic, as nginx's preaccess
// phase (so a rate also bounds how fast a client guesses passwords): first the rate (refused: the
// limit's status, 429 by default, with Retry-After), then the count of requests in progress, held
// until the request ends however it ends (the LimitPass is on the coroutine's stack: a return, an
// exception, a hand-over, a coroutine destroyed in a wait all release it). A request admitted
// within its burst without `nodelay` then waits its delay, holding its count, as nginx's does.

#include "util/cidr.hpp"
#include "util/limit_table.hpp"

#include <cstdint>
#include <memory>

namespace weft::http {

struct Limits {
    std::shared_ptr<LimitTable> table;
    std::uint16_t rate_id = 0; // its rate's limit in the table; 0: none
    std::uint16_t conn_id = 0; // its count's; 0: none
    std::uint32_t max_conns = 0;
    std::uint16_t status = 429; // over a limit (a full table: 503)
};

// A count of limit_conn kept past its request, by what outlives the request
// on the same connection (a WebSocket or event-stream session: nginx counts
// a tunnel for its life). It keeps the table alive through a reload.
class LimitHold {
public:
    LimitHold(std::shared_ptr<LimitTable> table, std::uint32_t entry)
        : table_(std::move(table)), entry_(entry) {}
    LimitHold(const LimitHold&) = delete;
    LimitHold& operator=(const LimitHold&) = delete;
    ~LimitHold() {
        if (table_) table_->release(entry_);
    }

private:
    std::shared_ptr<LimitTable> table_;
    std::uint32_t entry_;
};

class LimitPass {
public:
    LimitPass() = default;
    LimitPass(const LimitPass&) = delete;
    LimitPass& operator=(const LimitPass&) = delete;
    ~LimitPass() {
        if (table_) table_->release(entry_);
    }

    struct Verdict {
        std::uint16_t status; // 0: admitted
        // Admitted: how long to wait first; refused: until a retry may be
        // admitted (Retry-After), at least 1 ms.
        std::uint32_t wait_ms;
    };
    // Whether `client` may go on, at `now_ms` on the loop's clock. Once only.
    Verdict enter(const Limits& limits, const IpAddress& client, std::uint64_t now_ms);
    // The count it holds, handed on (nullptr: none), while `limits` lives.
    std::unique_ptr<LimitHold> keep();

private:
    LimitTable* table_ = nullptr; // set while a count is held
    const Limits* limits_ = nullptr;
    std::uint32_t entry_ = 0;
};

} // namespace weft::http
