#pragma once
// What a connection received from its client: [0, pos) the current request
// (its head, and body bytes consumed), [pos, end) received and not yet
// consumed: the rest of the body, then pipelined requests. A request's
// Request views point into its head, so the head stays where it is until the
// request is done; body bytes are read in after it.

#include <cstddef>

namespace weft::http {

struct ReceiveBuffer {
    // Head limit plus room for body bytes behind the largest head.
    static constexpr std::size_t kSize = 20 * 1024;

    std::size_t pos = 0;
    std::size_t end = 0;
    char bytes[kSize];

    // Where the empty lines (CRLFs) buffered from `at` end.
    std::size_t past_empty_lines(std::size_t at) const {
        while (end - at >= 2 && bytes[at] == '\r' && bytes[at + 1] == '\n') at += 2;
        return at;
    }
};

} // namespace weft::http
