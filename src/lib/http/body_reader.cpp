#include "http/body_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace weft::http {

ssize_t BodyReader::read(void* into, std::size_t n, bool head_sent) {
    if (error_) return error_;
    if (done_ || n == 0) return 0;
    if (request_->expect_continue && !continue_sent_ && !head_sent && request_->minor == 1 &&
        in_.pos == in_.end) {
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        iovec iov{const_cast<char*>(kContinue), sizeof kContinue - 1};
        const int sent = socket_.send(&iov, 1);
        if (sent < 0) return error_ = sent;
    }
    continue_sent_ = true;
    if (request_->chunked) return read_chunked(static_cast<char*>(into), n);
    const std::size_t want = std::min<std::uint64_t>(n, left_);
    ssize_t got;
    if (in_.pos < in_.end) {
        got = static_cast<ssize_t>(std::min(want, in_.end - in_.pos));
        std::memcpy(into, in_.bytes + in_.pos, static_cast<std::size_t>(got));
        in_.pos += static_cast<std::size_t>(got);
    } else {
        // Straight into the caller's buffer, never past the body's end.
        got = socket_.receive(into, want, options_.body_timeout_ms);
        if (got < 0) return error_ = static_cast<int>(got);
        if (got == 0) return error_ = -ECONNRESET; // the body was cut short
    }
    left_ -= static_cast<std::uint64_t>(got);
    done_ = left_ == 0;
    return got;
}

ssize_t BodyReader::read_chunked(char* into, std::size_t n) {
    for (;;) {
        if (in_.pos == in_.end) {
            in_.pos = in_.end = base_;
            const ssize_t got = socket_.receive(in_.bytes + in_.end, ReceiveBuffer::kSize - in_.end,
                                                options_.body_timeout_ms);
            if (got < 0) return error_ = static_cast<int>(got);
            if (got == 0) return error_ = -ECONNRESET;
            in_.end += static_cast<std::size_t>(got);
        }
        const std::size_t available = std::min(in_.end - in_.pos, n);
        const ChunkedDecoder::Step step = chunked_.next({in_.bytes + in_.pos, available});
        in_.pos += step.consumed;
        switch (step.status) {
        case ChunkedDecoder::Status::data:
            if (chunked_.decoded() > options_.max_request_body) return error_ = -EFBIG;
            std::memcpy(into, step.data.data(), step.data.size());
            if (step.data.empty()) continue;
            return static_cast<ssize_t>(step.data.size());
        case ChunkedDecoder::Status::incomplete:
            continue;
        case ChunkedDecoder::Status::done:
            done_ = true;
            chunked_end_ = in_.pos;
            ended();
            return 0;
        case ChunkedDecoder::Status::error:
            return error_ = -EPROTO;
        }
    }
}

bool BodyReader::finish(bool closing) {
    if (done_) return true;
    if (error_ || awaits_continue() || closing) return false;
    char sink[2048];
    for (;;) {
        const ssize_t n = read(sink, sizeof sink, true);
        if (n == 0) return true;
        if (n < 0) return false;
    }
}

} // namespace weft::http
