#pragma once
// weft as it runs: the loops and their listeners, the configuration they
// serve, and what changes while they run: SIGHUP reloads the configuration
// file, SIGUSR1 reopens the logs (docs/architecture.md, "Reload").
//
// A reload is all or nothing. The file is loaded and built into a new
// server, new listeners are opened and a new error log too, on run()'s
// thread while the loops go on serving; anything that fails undoes the rest
// and the running server stays exactly as it was. Then each loop is told
// (a posted call) to serve new connections with the new server, listeners
// the file no longer names are closed, and the pools the file names again
// take its limits. The old server goes once its last request has ended on
// every loop (Serving), with the pools and the access log no newer server
// uses.

#include "backend_choice.hpp"
#include "build_server.hpp"
#include "config/config.hpp"
#include "fastcgi/upstream_pools.hpp"
#include "loop/loop_group.hpp"
#include "privilege.hpp"
#include "serving.hpp"
#include "util/systemd.hpp"

#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weft {

class Service {
public:
    // `config_file`: what SIGHUP re-reads ("": the configuration came from
    // the command line, and SIGHUP has nothing to re-read).
    Service(config::Config config, std::string config_file);
    ~Service();
    Service(const Service&) = delete;
    Service& operator=(const Service&) = delete;

    // Serves until SIGTERM, SIGINT or stop; the exit status.
    int run();

private:
    int start(std::string& error);
    void reload();
    // What a reload cannot change: the keys of `next` that differ from the
    // running configuration's and take effect only at a start ("" if none).
    std::string start_only_changes(const config::Config& next) const;
    // Serves connections on `address` from now: a socket systemd passed
    // for it, or a new one. 0 or -1 with `error`.
    // `proxied`: its connections start with a PROXY protocol header.
    int listen(const Address& address, bool proxied, std::string& error);
    void reopen_logs();
    // `server` (a BuiltServer's) runs no request on any loop: it goes.
    void release(http::Server* server);
    std::string status_line() const;

    // The running configuration; its io_backend names the backend the loops
    // run (what the status handler shows), whatever the file asked.
    config::Config config_;
    BackendChoice backend_; // chosen at start, kept by reloads
    std::string config_file_;
    std::optional<Identity> identity_;
    std::vector<systemd::PassedSocket> passed_; // closed last
    int first_stderr_ = -1;                     // fd 2 as weft found it
    struct Listener {
        Address configured; // as the file names it
        Address bound;      // as the LoopGroup does (a port 0 resolved)
    };
    std::vector<Listener> listeners_;
    fastcgi::UpstreamPools pools_;
    // The servers built, the running one last; older ones until their last
    // request ends. Destroyed after the loops.
    std::list<std::unique_ptr<BuiltServer>> built_;
    std::unique_ptr<Serving> serving_; // outlives the loops' last posted calls
    LoopGroup loops_;
    std::uint16_t handler_ = 0;
    std::uint16_t proxied_handler_ = 0; // for `listener ADDRESS proxy_protocol`
    unsigned reloads_ = 0;
};

} // namespace weft
