#include "serving.hpp"

#include "http/connection.hpp"

#include <cassert>
#include <memory>

namespace weft {

Serving::Serving(std::size_t loops, Released released)
    : current_(loops), released_(std::move(released)) {}

Loop::Handler Serving::handler(std::size_t index, bool proxied) {
    return [this, &current = current_[index], index, proxied](int fd) {
        return serve(fd, current, index, proxied);
    };
}

void Serving::start(http::Server& server) {
    prepare(server);
    for (Current& current : current_) current.server = &server;
}

void Serving::prepare(http::Server& server) {
    server.use = std::make_unique<http::ServerUse>(current_.size());
}

std::int64_t Serving::serve(int fd, Current& current, std::size_t index, bool proxied) {
    http::Server& server = *current.server;
    // Counted off when the coroutine ends, and when a stop destroys it
    // suspended (its stack unwinds through this).
    struct Counted {
        Serving& serving;
        http::Server& server;
        http::ServerUse::OnLoop& here;
        ~Counted() {
            if (--here.connections == 0 && here.replaced) serving.leave(server);
        }
    } counted{*this, server, server.use->on_loop[index]};
    ++counted.here.connections;
    return http::serve_connection(fd, server, &counted.here.replaced, proxied);
}

void Serving::replace(Loop& loop, http::Server& server) {
    assert(server.use);
    http::Server& old = *current_[loop.index()].server;
    current_[loop.index()].server = &server;
    http::ServerUse::OnLoop& here = old.use->on_loop[loop.index()];
    assert(!here.replaced);
    here.replaced = true;
    if (here.connections == 0) leave(old);
}

void Serving::leave(http::Server& server) {
    if (--server.use->loops_left == 0) released_(&server);
}

} // namespace weft
