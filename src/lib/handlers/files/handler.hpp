#pragma once
// The `files` handler: static files under a document root (DESIGN.md §7).

#include "config/config.hpp"
#include "http/handler.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace weft::handlers {

class FilesHandler final : public http::Handler {
public:
    // The handler for `config`, whose root defaults to `site_root`; nullptr
    // with a one-line reason when the root cannot be opened.
    static std::unique_ptr<FilesHandler> create(const config::FilesHandler& config,
                                                std::string_view site_root, std::string& error);
    ~FilesHandler() override;

    void serve(http::Exchange& exchange) const override;

private:
    struct State;
    explicit FilesHandler(std::unique_ptr<State> state, std::string prefix);
    std::unique_ptr<State> state_;
};

} // namespace weft::handlers
