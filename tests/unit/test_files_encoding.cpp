// Accept-Encoding: which precompressed twins a client takes, best first
// (files/encoding.hpp).

#include "handlers/files/encoding.hpp"

#include <catch2/catch.hpp>

#include <string_view>
#include <vector>

using namespace weft::handlers;

namespace {
std::vector<Encoding> twins(std::string_view field) {
    const TwinOrder order = twin_order(field);
    return {order.twins, order.twins + order.count};
}
using E = Encoding;
} // namespace

TEST_CASE("encoding: which twins a client takes, best first", "[files]") {
    CHECK(twins("").empty());
    CHECK(twins("identity").empty());
    CHECK(twins("deflate").empty());
    CHECK(twins("gzip") == std::vector<E>{E::gzip});
    CHECK(twins("x-gzip") == std::vector<E>{E::gzip});
    CHECK(twins("br") == std::vector<E>{E::br});
    CHECK(twins("gzip, deflate, br") == std::vector<E>{E::br, E::gzip});
    CHECK(twins("GZIP, BR") == std::vector<E>{E::br, E::gzip});
    // q=0 disables; the higher q comes first; a tie goes to br.
    CHECK(twins("gzip, br;q=0") == std::vector<E>{E::gzip});
    CHECK(twins("br;q=0.0, gzip;q=0.000") == std::vector<E>{});
    CHECK(twins("br;q=0.5, gzip;q=0.8") == std::vector<E>{E::gzip, E::br});
    CHECK(twins("br;q=0.8, gzip;q=0.8") == std::vector<E>{E::br, E::gzip});
    CHECK(twins("gzip ; q=1 , br ; Q=0.001") == std::vector<E>{E::gzip, E::br});
    // "*" stands for what is not named.
    CHECK(twins("*") == std::vector<E>{E::br, E::gzip});
    CHECK(twins("*;q=0") == std::vector<E>{});
    CHECK(twins("gzip, *;q=0") == std::vector<E>{E::gzip});
    CHECK(twins("br;q=0, *") == std::vector<E>{E::gzip});
    // A q-value that does not parse discards its element.
    CHECK(twins("br;q=2, gzip") == std::vector<E>{E::gzip});
    CHECK(twins("br;q=0.5000") == std::vector<E>{});
    CHECK(twins("br;q=abc") == std::vector<E>{});
    CHECK(twins("br;q=1.001") == std::vector<E>{});
    CHECK(twins("br;level=5") == std::vector<E>{E::br});

    CHECK(twin_suffix(E::br) == ".br");
    CHECK(twin_suffix(E::gzip) == ".gz");
    CHECK(twin_suffix(E::identity).empty());
    CHECK(content_coding(E::br) == "br");
    CHECK(content_coding(E::gzip) == "gzip");
}
