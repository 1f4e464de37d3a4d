// The pools a reload keeps: same name and servers, the same Upstream; its
// new limits only once the reload commits.

#include "fastcgi/upstream_pools.hpp"

#include <catch2/catch.hpp>

using namespace weft;
using fastcgi::UpstreamOptions;
using fastcgi::UpstreamPools;

namespace {

UpstreamOptions options(const char* name, const char* server, unsigned max_conns) {
    std::string error;
    UpstreamOptions o;
    o.name = name;
    o.servers = {*Address::parse(server, error)};
    o.max_conns = max_conns;
    return o;
}

} // namespace

TEST_CASE("a pool named again with the same servers is the same pool, retuned at commit",
          "[fastcgi]") {
    UpstreamPools pools;
    auto first = pools.get(options("php", "unix:/run/php.sock", 4));
    auto again = pools.get(options("php", "unix:/run/php.sock", 9));
    CHECK(again == first);
    CHECK(first->options().max_conns == 4); // not before the commit
    pools.commit();
    CHECK(first->options().max_conns == 9);
    CHECK(pools.get(options("php", "unix:/run/other.sock", 4)) != first);
    CHECK(pools.get(options("app", "unix:/run/php.sock", 4)) != first);
}

TEST_CASE("an abandoned reload changes no pool and drops the ones it made", "[fastcgi]") {
    UpstreamPools pools;
    auto running = pools.get(options("php", "unix:/run/php.sock", 4));
    pools.commit();
    {
        auto kept = pools.get(options("php", "unix:/run/php.sock", 1));
        auto made = pools.get(options("new", "unix:/run/new.sock", 1));
    } // the failed build lets go of them
    pools.abandon();
    CHECK(running->options().max_conns == 4);
    pools.commit(); // nothing pending any more
    CHECK(running->options().max_conns == 4);
    CHECK(pools.get(options("php", "unix:/run/php.sock", 4)) == running);
    CHECK(pools.take_unused().empty()); // "new" went with the abandon
}

TEST_CASE("pools no configuration holds are handed back once", "[fastcgi]") {
    UpstreamPools pools;
    auto held = pools.get(options("php", "unix:/run/php.sock", 4));
    std::weak_ptr<fastcgi::Upstream> dropped = pools.get(options("old", "unix:/run/old.sock", 4));
    pools.commit();
    auto unused = pools.take_unused();
    REQUIRE(unused.size() == 1);
    CHECK(unused.front() == dropped.lock());
    CHECK(pools.take_unused().empty());
    CHECK(pools.get(options("php", "unix:/run/php.sock", 4)) == held);
}
