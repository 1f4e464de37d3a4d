#pragma once
// Future<T>: one value or one error, set once; whoever awaits it later gets
// it at once (replay). The awaited result is 0 for a value, -errno for an
// error; value() and error() read them.

#include "event/event.hpp"

#include <cassert>
#include <optional>
#include <utility>

namespace weft {

template <class T>
class Future final : public Event {
public:
    explicit Future(Loop& loop) : Event(loop) {}

    // false if it was already settled
    bool resolve(T value) {
        if (has(kCompleted)) return false;
        value_ = std::move(value);
        complete(0);
        return true;
    }
    bool reject(int error) {
        assert(error > 0);
        if (has(kCompleted)) return false;
        error_ = error;
        complete(-error);
        return true;
    }

    bool settled() const { return has(kCompleted); }
    // The value; only after a resolve.
    T& value() { return *value_; }
    // The errno of a reject, 0 otherwise.
    int error() const { return error_; }

    std::string info() const override { return describe("future"); }

private:
    std::optional<T> value_;
    int error_ = 0;
};

} // namespace weft
