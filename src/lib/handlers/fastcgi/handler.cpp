#include "handlers/fastcgi/handler.hpp"

#include "handlers/fastcgi/script_call.hpp"
#include "handlers/fastcgi/state.hpp"
#include "handlers/redirect.hpp"
#include "http/exchange.hpp"

namespace weft::handlers {

FastcgiHandler::FastcgiHandler(std::unique_ptr<State> state, http::Route route)
    : http::Handler(std::move(route)), state_(std::move(state)) {
    state_->handler = this;
}

FastcgiHandler::~FastcgiHandler() = default;

std::string FastcgiHandler::describe() const {
    return state_->description;
}

void FastcgiHandler::serve(http::Exchange& exchange) const {
    const std::string_view path = exchange.path();
    char scratch[2048 + 256];
    const ScriptTarget target = state_->scripts->scratch_size(path.size()) <= sizeof scratch
                                    ? state_->scripts->resolve(path, scratch)
                                    : ScriptTarget{};
    switch (target.kind) {
    case ScriptTarget::Kind::forbidden:
        exchange.send_error(403);
        return;
    case ScriptTarget::Kind::not_found:
        exchange.send_error(404);
        return;
    case ScriptTarget::Kind::add_slash:
        redirect_to_directory(exchange, path);
        return;
    case ScriptTarget::Kind::static_file:
        if (state_->files)
            state_->files->serve(exchange);
        else
            exchange.send_error(404);
        return;
    case ScriptTarget::Kind::script:
        break;
    }
    // DOCUMENT_URI is the script and its PATH_INFO: the path itself, or the
    // index or front controller that runs for it (as nginx's $document_uri
    // after its internal redirect).
    ScriptCall(*state_, exchange).run(target, target.path_info.empty() ? target.script_name : path);
}

} // namespace weft::handlers
