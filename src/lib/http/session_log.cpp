#include "http/session_log.hpp"

namespace weft::http {

SessionLog::SessionLog(std::shared_ptr<AccessLog> log, const AccessLogEntry& request)
    : log_(std::move(log)) {
    const std::string_view fields[6] = {request.remote,       request.peer,    request.remote_user,
                                        request.request_line, request.referer, request.user_agent};
    std::size_t size = 0;
    for (const std::string_view field : fields) size += field.size();
    fields_.reserve(size);
    for (std::size_t i = 0; i < 6; ++i) {
        fields_.append(fields[i]);
        ends_[i] = static_cast<std::uint32_t>(fields_.size());
    }
}

void SessionLog::write(int status, std::uint64_t body_bytes, std::string_view note) {
    std::string_view field[6];
    std::uint32_t start = 0;
    for (std::size_t i = 0; i < 6; ++i) {
        field[i] = std::string_view(fields_).substr(start, ends_[i] - start);
        start = ends_[i];
    }
    log_->write(
        {field[0], field[1], field[2], field[3], status, body_bytes, field[4], field[5], note});
}

} // namespace weft::http
