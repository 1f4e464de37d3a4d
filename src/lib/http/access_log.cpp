#include "http/access_log.hpp"

#include "util/log_file.hpp"

#include "loop/loop.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace weft::http {

namespace {

constexpr std::size_t kBufferSize = 16 * 1024;
constexpr std::size_t kMaxLine = 4096; // longer fields are cut
constexpr std::size_t kMaxNote = 256;  // a longer note is cut

// One per thread: the lines not yet written, and the timer that writes them
// a second after the first.
struct ThreadBuffer {
    const AccessLog* log = nullptr;         // whose lines it holds
    std::shared_ptr<const AccessLog> owner; // the same, when shared: kept open until written
    int fd = -1;
    std::size_t size = 0;
    Timer timer;
    char data[kBufferSize];

    void flush() {
        std::size_t done = 0;
        while (done < size) {
            const ssize_t n = ::write(fd, data + done, size - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break; // a log that cannot be written loses lines, not requests
            done += static_cast<std::size_t>(n);
        }
        size = 0;
        timer.cancel();
        log = nullptr;
        owner.reset(); // last: it may close the log
    }
    ~ThreadBuffer() { flush(); }
};

ThreadBuffer& thread_buffer() {
    thread_local ThreadBuffer buffer;
    return buffer;
}

// Appends `text` with '"', '\\' and bytes outside printable ASCII escaped as
// \xHH (as nginx does), so a field cannot forge a line or a quote.
char* escaped(char* out, const char* end, std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f && c != '"' && c != '\\') {
            if (out >= end) break; // past it: a field before took the room
            *out++ = c;
        } else {
            if (end - out < 4) break;
            *out++ = '\\';
            *out++ = 'x';
            *out++ = kHex[u >> 4];
            *out++ = kHex[u & 15];
        }
    }
    return out;
}

// "[10/Oct/2000:13:55:36 +0000]" for now, formatted once a second per thread.
std::string_view local_time() {
    thread_local std::time_t cached = -1;
    thread_local char text[40];
    thread_local std::size_t length = 0;
    timespec now{};
    clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (now.tv_sec != cached) {
        cached = now.tv_sec;
        std::tm tm{};
        localtime_r(&cached, &tm);
        length = std::strftime(text, sizeof text, "[%d/%b/%Y:%H:%M:%S %z]", &tm);
    }
    return {text, length};
}

} // namespace

AccessLog::AccessLog(std::string target, std::string& error) : target_(std::move(target)) {
    if (target_ == "stderr") {
        fd_ = ::dup(2);
    } else {
        fd_ = open_log_file(target_);
        if (fd_ < 0) errno = -fd_;
    }
    if (fd_ < 0) error = "cannot open access log " + target_ + ": " + std::strerror(errno);
}

AccessLog::~AccessLog() {
    if (fd_ >= 0) ::close(fd_);
}

void AccessLog::write(const AccessLogEntry& e) {
    ThreadBuffer& buffer = thread_buffer();
    // Lines of another log (the one a reload replaced) go out to it first.
    if (buffer.log != this || kBufferSize - buffer.size < kMaxLine) {
        buffer.flush();
        buffer.log = this;
        buffer.owner = weak_from_this().lock();
        buffer.fd = fd_;
    }
    char* out = buffer.data + buffer.size;
    const char* const line_end = out + kMaxLine - 1; // room for the newline
    // A note keeps its room: the fields before it are cut first.
    const char* end = e.note.empty() ? line_end : line_end - kMaxNote - 3;
    out = escaped(out, end, e.remote);
    *out++ = ' ';
    out = escaped(out, end, e.peer.empty() ? "-" : e.peer);
    const std::string_view time = local_time();
    *out++ = ' ';
    out = escaped(out, end - 1024, e.remote_user.empty() ? "-" : e.remote_user);
    out += std::snprintf(out, static_cast<std::size_t>(end - out), " %.*s \"",
                         static_cast<int>(time.size()), time.data());
    out = escaped(out, end - 64, e.request_line);
    out += std::snprintf(out, static_cast<std::size_t>(end - out), "\" %d %llu \"", e.status,
                         static_cast<unsigned long long>(e.body_bytes));
    out = escaped(out, end - 8, e.referer.empty() ? "-" : e.referer);
    *out++ = '"';
    *out++ = ' ';
    *out++ = '"';
    out = escaped(out, end - 2, e.user_agent.empty() ? "-" : e.user_agent);
    *out++ = '"';
    if (!e.note.empty()) [[unlikely]] {
        *out++ = ' ';
        *out++ = '"';
        out = escaped(out, line_end - 1, e.note);
        *out++ = '"';
    }
    *out++ = '\n';
    const bool was_empty = buffer.size == 0;
    buffer.size = static_cast<std::size_t>(out - buffer.data);
    Loop* loop = Loop::current();
    if (was_empty && loop) {
        buffer.timer.fire = [](Timer&) { thread_buffer().flush(); };
        loop->timers().arm(buffer.timer, loop->now() + 1000);
    } else if (!loop) {
        buffer.flush();
    }
}

void AccessLog::flush_this_thread() {
    thread_buffer().flush();
}

int AccessLog::give_to(unsigned uid, unsigned gid) {
    return target_ == "stderr" ? 0 : give_log_file(fd_, target_, uid, gid);
}

int AccessLog::reopen() {
    if (target_ == "stderr") return 0;
    const int fresh = open_log_file(target_);
    if (fresh < 0) return fresh;
    // dup3 swaps the file under the same fd number: a thread writing now
    // writes to one file or the other, never to a closed fd.
    const int result = ::dup3(fresh, fd_, O_CLOEXEC) < 0 ? -errno : 0;
    ::close(fresh);
    return result;
}

} // namespace weft::http
