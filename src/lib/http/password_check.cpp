#include "http/password_check.hpp"

#include "loop/io.hpp"
#include "loop/loop.hpp"
#include "loop/yield_protocol.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace weft::http {

namespace {

// Checks waiting for a worker, at most: past it a request gets 503 rather
// than a queue that grows without bound under a flood of wrong passwords.
constexpr std::size_t kMaxQueued = 1024;
constexpr unsigned kMaxWorkers = 4;

struct Job {
    std::atomic<int> refs{2}; // the waiting coroutine's and the worker's
    int notify_fd = -1;       // the worker's dup of the eventfd
    HtpasswdUser user;
    std::string password;
    std::atomic<bool> match{false};

    void release() {
        if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        explicit_bzero(password.data(), password.size());
        delete this;
    }
};

std::atomic<std::size_t> in_flight{0};

class Workers {
public:
    static Workers& instance() {
        static Workers workers;
        return workers;
    }

    bool submit(Job* job) {
        std::lock_guard lock(mutex_);
        if (queue_.size() >= kMaxQueued) return false;
        if (threads_.empty()) start();
        queue_.push_back(job);
        ready_.notify_one();
        return true;
    }

    ~Workers() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        ready_.notify_all();
        for (std::thread& t : threads_) t.join();
        for (Job* job : queue_) finish(job, false);
    }

private:
    Workers() = default;

    // Under mutex_. The workers start with every signal blocked (the loops
    // take signals through a signalfd; a worker must never be the thread
    // the kernel picks for SIGTERM's default action).
    void start() {
        const unsigned count = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxWorkers);
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        for (unsigned i = 0; i < count; ++i) threads_.emplace_back([this] { run(); });
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }

    void run() {
        // Behind the loops: a burst of checks slows other checks, not requests.
        setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
        for (;;) {
            Job* job;
            {
                std::unique_lock lock(mutex_);
                ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
                if (queue_.empty()) return;
                job = queue_.front();
                queue_.pop_front();
            }
            // A job whose coroutine is gone (its client left, its loop
            // stopped) has nobody to answer: checking it anyway held the
            // next login and a stop behind a flood of clients that sent
            // wrong passwords and left (40 bcrypt checks at cost 14: 20 s).
            const bool awaited = job->refs.load(std::memory_order_acquire) == 2;
            finish(job, awaited && verify_password(job->user, job->password));
        }
    }

    static void finish(Job* job, bool match) {
        job->match.store(match, std::memory_order_release);
        const std::uint64_t one = 1;
        while (::write(job->notify_fd, &one, sizeof one) < 0 && errno == EINTR) {
        }
        ::close(job->notify_fd);
        job->release();
    }

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Job*> queue_;
    std::vector<std::thread> threads_;
    bool stopping_ = false;
};

// The coroutine's side of a job: its eventfd, closed through the loop, and
// its reference, however the coroutine ends.
struct Waiting {
    Loop& loop;
    int fd;
    Job* job;
    ~Waiting() {
        loop.close_fd(fd);
        job->release();
        in_flight.fetch_sub(1, std::memory_order_relaxed);
    }
};

} // namespace

PasswordCheck check_password(const HtpasswdUser& user, std::string_view password) {
    Loop* loop = Loop::current();
    if (!is_slow(user.scheme) || !loop || !Loop::current_task())
        return verify_password(user, password) ? PasswordCheck::match : PasswordCheck::mismatch;
    const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return PasswordCheck::busy;
    const int notify_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (notify_fd < 0) {
        ::close(fd);
        return PasswordCheck::busy;
    }
    auto* job = new Job;
    job->notify_fd = notify_fd;
    job->user = user;
    job->password.assign(password);
    in_flight.fetch_add(1, std::memory_order_relaxed);
    const Waiting waiting{*loop, fd, job};
    if (!Workers::instance().submit(job)) {
        ::close(notify_fd);
        job->release(); // the worker's reference: it never had the job
        return PasswordCheck::busy;
    }
    std::uint64_t count = 0;
    const ssize_t n = io::read(fd, &count, sizeof count);
    if (n != static_cast<ssize_t>(sizeof count)) return PasswordCheck::mismatch;
    return job->match.load(std::memory_order_acquire) ? PasswordCheck::match
                                                      : PasswordCheck::mismatch;
}

std::size_t password_checks_in_flight() {
    return in_flight.load(std::memory_order_relaxed);
}

} // namespace weft::http
