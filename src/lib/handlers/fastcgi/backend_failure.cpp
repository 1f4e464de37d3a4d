#include "handlers/fastcgi/backend_failure.hpp"

#include <cerrno>

namespace weft::handlers {

namespace {

enum class Cause : std::uint8_t {
    client_gone, // ECONNABORTED (the client hung up), ECANCELED (the server stops)
    timed_out,   // the step's own timeout
    closed,      // the backend closed its side
    failed,      // any other error
    busy,        // every connection stayed busy for queue_timeout
};

struct Row {
    BackendStep step;
    Cause cause;
    int status;
    const char* what;
    bool with_errno = false;
};

// A client gone is never answered, whatever the step (499 in the access
// log); any other cause a step has no row for is its `failed` row.
constexpr Row kRows[] = {
    {BackendStep::connect, Cause::failed, 502, "no backend accepted a connection"},
    {BackendStep::connect, Cause::timed_out, 504, "connecting to the backend timed out"},
    {BackendStep::connect, Cause::busy, 503,
     "every backend connection stayed busy for queue_timeout"},
    {BackendStep::send, Cause::timed_out, 504, "sending the request to the backend timed out"},
    {BackendStep::send, Cause::failed, 502, "sending the request to the backend failed", true},
    {BackendStep::read, Cause::timed_out, 504, "the backend did not answer within read_timeout"},
    {BackendStep::read, Cause::closed, 502,
     "the backend closed the connection before the end of its response"},
    {BackendStep::read, Cause::failed, 502, "reading from the backend failed", true},
};

constexpr bool has_failed_row(BackendStep step) {
    for (const Row& row : kRows)
        if (row.step == step && row.cause == Cause::failed) return true;
    return false;
}
// answer() falls back on them.
static_assert(has_failed_row(BackendStep::connect) && has_failed_row(BackendStep::send) &&
              has_failed_row(BackendStep::read));

BackendFailure answer(BackendStep step, Cause cause, int error) {
    if (cause == Cause::client_gone) return {0, nullptr, 0};
    const Row* failed = nullptr;
    for (const Row& row : kRows) {
        if (row.step != step) continue;
        if (row.cause == cause) return {row.status, row.what, row.with_errno ? error : 0};
        if (row.cause == Cause::failed) failed = &row;
    }
    return {failed->status, failed->what, failed->with_errno ? error : 0};
}

} // namespace

BackendFailure backend_failure(fastcgi::AcquireError error) {
    using fastcgi::AcquireError;
    const Cause cause = error == AcquireError::unavailable     ? Cause::failed
                        : error == AcquireError::timed_out     ? Cause::timed_out
                        : error == AcquireError::queue_timeout ? Cause::busy
                                                               : Cause::client_gone;
    return answer(BackendStep::connect, cause, 0);
}

BackendFailure backend_failure(BackendStep step, long result) {
    const Cause cause = result == -ECONNABORTED || result == -ECANCELED ? Cause::client_gone
                        : result == -ETIMEDOUT                          ? Cause::timed_out
                        : result == 0                                   ? Cause::closed
                                                                        : Cause::failed;
    return answer(step, cause, static_cast<int>(-result));
}

} // namespace weft::handlers
