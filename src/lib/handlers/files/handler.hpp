#pragma once
// The `files` handler: static files under a document root.

#include "config/config.hpp"
#include "handlers/build.hpp"
#include "http/handler.hpp"

#include <memory>
#include <string>

namespace weft::handlers {

class FilesHandler final : public http::Handler {
public:
    struct State; // the settings create() resolved
    FilesHandler(std::unique_ptr<State> state, http::Route route);
    ~FilesHandler() override;

    void serve(http::Exchange& exchange) const override;
    std::string describe() const override;

private:
    std::unique_ptr<State> state_;
};

// The handler for `config`, whose root defaults to its site's; nullptr with
// a one-line reason when the root cannot be opened.
std::unique_ptr<http::Handler> create(const config::FilesHandler& config,
                                      const BuildContext& context, std::string& error);

} // namespace weft::handlers
