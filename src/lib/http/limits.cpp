#include "http/limits.hpp"

namespace weft::http {

namespace {

// No room for a client's entry: the server's trouble, not the client's
// fault, so 503 whatever the limit's status (as nginx's full zone).
constexpr std::uint16_t kTableFull = 503;
constexpr std::uint32_t kRetryMs = 1000;

} // namespace

LimitPass::Verdict LimitPass::enter(const Limits& limits, const IpAddress& client,
                                    std::uint64_t now_ms) {
    using Outcome = LimitTable::Outcome;
    LimitTable& table = *limits.table;
    std::uint32_t delay = 0;
    if (limits.rate_id) {
        const LimitTable::RateVerdict rate = table.take_request(client, limits.rate_id, now_ms);
        if (rate.outcome == Outcome::over_limit) return {limits.status, rate.wait_ms};
        if (rate.outcome == Outcome::table_full) return {kTableFull, kRetryMs};
        delay = rate.wait_ms;
    }
    if (limits.conn_id && LimitTable::limited(client)) {
        const LimitTable::Hold hold =
            table.acquire(client, limits.conn_id, limits.max_conns, now_ms);
        // How long until one of the requests in progress ends is unknown.
        if (hold.outcome == Outcome::over_limit) return {limits.status, kRetryMs};
        if (hold.outcome == Outcome::table_full) return {kTableFull, kRetryMs};
        table_ = &table;
        limits_ = &limits;
        entry_ = hold.entry;
    }
    return {0, delay};
}

std::unique_ptr<LimitHold> LimitPass::keep() {
    if (!table_) return nullptr;
    table_ = nullptr;
    return std::make_unique<LimitHold>(limits_->table, entry_);
}

} // namespace weft::http
