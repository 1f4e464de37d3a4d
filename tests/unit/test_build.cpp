// Config values as the runtime takes them (handlers/build.hpp).

#include "handlers/build.hpp"

#include <catch2/catch.hpp>

using namespace weft;
using namespace std::chrono_literals;

TEST_CASE("durations become milliseconds of at least 1", "[build]") {
    CHECK(handlers::to_ms(0ms) == 1);
    CHECK(handlers::to_ms(1500ms) == 1500);
    CHECK(handlers::to_ms(std::chrono::hours(24 * 365 * 200)) == UINT32_MAX);
}

TEST_CASE("an upstream's options carry every key", "[build]") {
    config::Upstream upstream;
    upstream.name = "php";
    upstream.keepalive = 3;
    upstream.max_conns = 7;
    upstream.connect_timeout = 1s;
    upstream.read_timeout = 2s;
    upstream.queue_timeout = 3s;
    upstream.keepalive_timeout = 4s;
    const fastcgi::UpstreamOptions options = handlers::upstream_options(upstream);
    CHECK(options.name == "php");
    CHECK(options.keepalive == 3);
    CHECK(options.max_conns == 7);
    CHECK(options.connect_timeout_ms == 1000);
    CHECK(options.read_timeout_ms == 2000);
    CHECK(options.queue_timeout_ms == 3000);
    CHECK(options.keepalive_timeout_ms == 4000);
}

TEST_CASE("keepalive_timeout = 0 keeps idle backend connections for good", "[build]") {
    // The config documents 0 as "never"; the pool reads 0 as no timer. A
    // clamp to 1 ms would close every kept connection at once instead.
    config::Upstream upstream;
    upstream.keepalive_timeout = 0ms;
    CHECK(handlers::upstream_options(upstream).keepalive_timeout_ms == 0);
}
