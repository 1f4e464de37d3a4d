#pragma once
// Which server each loop serves new connections with, across reloads.
//
// A loop learns of a new server from a call posted to it (replace()), so
// a request reads one pointer of its own loop and pays no lock or atomic.
// A connection coroutine counts itself on its loop while it runs (a plain
// integer of that loop's); a replaced server is free on a loop once its last
// connection there ends, and free everywhere once every loop says so: then
// `released` runs (on the last loop's thread) and may destroy it. An idle
// kept-alive connection holds no coroutine, so it counts for none: its next
// request starts a coroutine with the new server. One that has its next
// request already (Connection::move_to_new_server) hands it to a new
// coroutine the same way.

#include "http/server.hpp"
#include "loop/loop.hpp"

#include <cstddef>
#include <functional>
#include <vector>

namespace weft {

class Serving {
public:
    using Released = std::function<void(http::Server* server)>;

    Serving(std::size_t loops, Released released);

    // Loop `index`'s connection handler; `proxied`: for listeners whose
    // connections start with a PROXY protocol header.
    Loop::Handler handler(std::size_t index, bool proxied = false);
    // Before run(): every loop serves `server`.
    void start(http::Server& server);
    // Readies `server` to replace the running one, before any loop sees it.
    void prepare(http::Server& server);
    // On `loop`'s thread, for a prepared server: new connections take it
    // from now. The one it replaces is released once no loop runs a
    // connection with it.
    void replace(Loop& loop, http::Server& server);

private:
    struct alignas(64) Current {
        http::Server* server = nullptr;
    };
    std::int64_t serve(int fd, Current& current, std::size_t index, bool proxied);
    // `server` was replaced on `loop` and runs no connection there.
    void leave(http::Server& server);

    std::vector<Current> current_; // by loop index
    Released released_;
};

} // namespace weft
