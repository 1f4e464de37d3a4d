// What the client is answered, and what the error log says, when a step
// with the backend fails (fastcgi/backend_failure.hpp).

#include "handlers/fastcgi/backend_failure.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <string>

using namespace weft::handlers;
using weft::fastcgi::AcquireError;

namespace {

std::string line(const BackendFailure& f) {
    return f.what ? f.what : "";
}

} // namespace

TEST_CASE("backend failures: no connection is 502, 504 or 503 by why", "[fastcgi]") {
    BackendFailure f = backend_failure(AcquireError::unavailable);
    CHECK(f.status == 502);
    CHECK(line(f) == "no backend accepted a connection");
    CHECK(f.error == 0);
    f = backend_failure(AcquireError::timed_out);
    CHECK(f.status == 504);
    CHECK(line(f) == "connecting to the backend timed out");
    f = backend_failure(AcquireError::queue_timeout);
    CHECK(f.status == 503);
    CHECK(line(f) == "every backend connection stayed busy for queue_timeout");
    CHECK(backend_failure(AcquireError::client_gone).status == 0);
}

TEST_CASE("backend failures: a send or a read that failed, with its errno", "[fastcgi]") {
    BackendFailure f = backend_failure(BackendStep::send, -ETIMEDOUT);
    CHECK(f.status == 504);
    CHECK(line(f) == "sending the request to the backend timed out");
    CHECK(f.error == 0);
    f = backend_failure(BackendStep::send, -EPIPE);
    CHECK(f.status == 502);
    CHECK(line(f) == "sending the request to the backend failed");
    CHECK(f.error == EPIPE);

    f = backend_failure(BackendStep::read, -ETIMEDOUT);
    CHECK(f.status == 504);
    CHECK(line(f) == "the backend did not answer within read_timeout");
    f = backend_failure(BackendStep::read, 0);
    CHECK(f.status == 502);
    CHECK(line(f) == "the backend closed the connection before the end of its response");
    CHECK(f.error == 0);
    f = backend_failure(BackendStep::read, -ECONNRESET);
    CHECK(f.status == 502);
    CHECK(line(f) == "reading from the backend failed");
    CHECK(f.error == ECONNRESET);
}

TEST_CASE("backend failures: a client gone is never answered, whatever the step", "[fastcgi]") {
    for (const BackendStep step : {BackendStep::send, BackendStep::read}) {
        CHECK(backend_failure(step, -ECONNABORTED).status == 0); // the client hung up
        CHECK(backend_failure(step, -ECANCELED).status == 0);    // the server stops
    }
}
