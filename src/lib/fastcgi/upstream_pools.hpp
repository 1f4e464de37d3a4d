#pragma once
// The upstream pools alive, kept across reloads: a configuration that names
// a pool again (same name, same servers) gets the same Upstream, with its
// open connections and its count of them, so max_conns holds across a
// reload; its new limits and timeouts apply once the reload commits.
//
// Handlers hold their pools (shared_ptr); a pool that no running
// configuration uses any more is handed back by take_unused() for the caller
// to retire: its idle connections live on the loops, so it is destroyed only
// once every loop has closed them (Upstream::close_idle, then a round of the
// loops). Setup and reload thread only.

#include "fastcgi/upstream.hpp"

#include <memory>
#include <vector>

namespace weft::fastcgi {

class UpstreamPools {
public:
    // The pool for `options`: the one kept under its name with the same
    // servers, or a new one.
    std::shared_ptr<Upstream> get(const UpstreamOptions& options);
    // The configuration that asked for them runs from now: the kept pools
    // take the options it gave them.
    void commit();
    // It does not: nothing it asked for changes anything.
    void abandon();
    // The pools only this holds (no configuration uses them), taken out.
    std::vector<std::shared_ptr<Upstream>> take_unused();

private:
    struct Retune {
        std::shared_ptr<Upstream> pool;
        UpstreamOptions options;
    };
    std::vector<std::shared_ptr<Upstream>> pools_;
    std::vector<Retune> pending_;
};

} // namespace weft::fastcgi
