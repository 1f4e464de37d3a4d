// per_loop: a handler's state on this thread, found by the handler's id, the
// last one found remembered; a state whose handler is gone is dropped, and a
// state that throws as it is made leaves no other handler's state behind.

#include "handlers/per_loop.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <new>
#include <string>

using weft::handlers::per_loop;

namespace {

// Each test case its own State type: per_loop's table is per type and thread.
template <int>
struct Root {
    static inline int made = 0;
    static inline bool fail_next = false;
    explicit Root(std::string from) : path(std::move(from)) {
        if (fail_next) {
            fail_next = false;
            throw std::bad_alloc();
        }
        ++made;
    }
    std::string path;
};

} // namespace

TEST_CASE("per_loop: each id its own state, made once, whatever the order and arguments of asking",
          "[handlers]") {
    using State = Root<1>;
    auto one = std::make_shared<const bool>(true);
    auto two = std::make_shared<const bool>(true);
    State& a = per_loop<State>(1, one, "/srv/one");
    State& b = per_loop<State>(2, two, "/srv/two");
    // Asked with arguments of other types ("ignored" is a char[8], not a
    // char[9]): the same table.
    CHECK(&per_loop<State>(1, one, "ignored") == &a);
    CHECK(&per_loop<State>(1, one, "ignored") == &a);
    CHECK(&per_loop<State>(2, two, "ignored") == &b);
    CHECK(a.path == "/srv/one");
    CHECK(b.path == "/srv/two");
    CHECK(State::made == 2);
}

TEST_CASE("per_loop: a state that throws as it is made leaves the last one unremembered",
          "[handlers]") {
    using State = Root<2>;
    auto one = std::make_shared<const bool>(true);
    auto two = std::make_shared<const bool>(true);
    CHECK(per_loop<State>(1, one, "/srv/one").path == "/srv/one");
    State::fail_next = true;
    CHECK_THROWS_AS(per_loop<State>(2, two, "/srv/two"), std::bad_alloc);
    // Asked again, id 2 gets a state of its own, not id 1's.
    CHECK(per_loop<State>(2, two, "/srv/two").path == "/srv/two");
    CHECK(per_loop<State>(1, one, "/srv/one").path == "/srv/one");
}

TEST_CASE("per_loop: the state of a handler that is gone goes when a new one comes, "
          "the remembered one with it",
          "[handlers]") {
    using State = Root<3>;
    auto one = std::make_shared<const bool>(true);
    CHECK(per_loop<State>(1, one, "/srv/one").path == "/srv/one");
    one.reset(); // a reload dropped handler 1
    auto two = std::make_shared<const bool>(true);
    State::fail_next = true; // and its successor's state fails once (ASan: no read of 1's)
    CHECK_THROWS_AS(per_loop<State>(2, two, "/srv/two"), std::bad_alloc);
    CHECK(per_loop<State>(2, two, "/srv/two").path == "/srv/two");
    CHECK(State::made == 2);
}
