#include "fastcgi/upstream_pools.hpp"

#include <algorithm>

namespace weft::fastcgi {

std::shared_ptr<Upstream> UpstreamPools::get(const UpstreamOptions& options) {
    for (const std::shared_ptr<Upstream>& pool : pools_) {
        if (pool->options().name == options.name && pool->options().servers == options.servers) {
            pending_.push_back({pool, options});
            return pool;
        }
    }
    return pools_.emplace_back(std::make_shared<Upstream>(options));
}

void UpstreamPools::commit() {
    for (const Retune& retune : pending_) retune.pool->retune(retune.options);
    pending_.clear();
}

void UpstreamPools::abandon() {
    pending_.clear();
    // New pools the failed configuration made never served: none has a
    // connection, so they go at once.
    std::erase_if(pools_, [](const std::shared_ptr<Upstream>& pool) {
        return pool.use_count() == 1 && pool->counts().open == 0;
    });
}

std::vector<std::shared_ptr<Upstream>> UpstreamPools::take_unused() {
    std::vector<std::shared_ptr<Upstream>> unused;
    std::erase_if(pools_, [&](std::shared_ptr<Upstream>& pool) {
        if (pool.use_count() > 1) return false;
        unused.push_back(std::move(pool));
        return true;
    });
    return unused;
}

} // namespace weft::fastcgi
