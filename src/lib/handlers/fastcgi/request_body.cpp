#include "handlers/fastcgi/request_body.hpp"

#include <cerrno>

namespace weft::handlers {

int read_body_whole(http::Exchange& exchange, Spool& body) {
    for (;;) {
        std::size_t room = 64 * 1024;
        char* into = body.reserve(room);
        if (!into) return -EIO;
        const ssize_t n = exchange.read_body(into, room);
        if (n <= 0) return static_cast<int>(n);
        body.commit(static_cast<std::size_t>(n));
    }
}

} // namespace weft::handlers
