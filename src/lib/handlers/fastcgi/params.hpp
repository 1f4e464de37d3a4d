#pragma once
// The FastCGI params of a request, as nginx's fastcgi.conf sends them, so a
// PHP application sees the same $_SERVER behind weft as behind nginx.
//
// SCRIPT_FILENAME (root + SCRIPT_NAME; with an alias, the alias + what
// follows the route's prefix), SCRIPT_NAME, PATH_INFO, and
// PATH_TRANSLATED (root + PATH_INFO) when PATH_INFO is not empty;
// REQUEST_URI (the target as sent), DOCUMENT_URI (the normalised path, or the
// script a front controller runs), QUERY_STRING, REQUEST_METHOD, CONTENT_TYPE
// and CONTENT_LENGTH (empty when there is no body), DOCUMENT_ROOT,
// GATEWAY_INTERFACE, SERVER_SOFTWARE, REDIRECT_STATUS, SERVER_PROTOCOL,
// REQUEST_SCHEME (https, and HTTPS=on, when a PROXY protocol header said the
// client spoke TLS to the proxy, or a trusted proxy sent X-Forwarded-Proto:
// https), REMOTE_ADDR, REMOTE_PORT (the client a trusted proxy's forwarding
// header named, with the port it gave or none, as nginx's realip; else the
// client a PROXY header named, else the peer), SERVER_ADDR, SERVER_PORT,
// SERVER_NAME, REMOTE_USER and AUTH_TYPE=Basic for a request auth_basic let
// in; then every request field as HTTP_*, and the handler's own `params { }`
// last.
//
// Request fields: repeated Cookie fields are joined with "; ", other
// repeated fields with ", ". Not passed: Proxy (HTTP_PROXY would become the
// application's outgoing proxy: "httpoxy"), and any field whose name holds
// '_' (X-Real_IP and X-Real-IP would both be HTTP_X_REAL_IP: a client could
// shadow a field a front proxy set; nginx drops them too).

#include "fastcgi/record.hpp"
#include "http/forwarded.hpp"
#include "http/request.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::handlers {

// The two ends of the client's connection as text, and whether the client
// spoke TLS (to a proxy that said so): what the endpoints' params say.
struct EndpointTexts {
    char remote_address[48] = "";
    char remote_port[8] = "";
    char server_address[48] = "";
    char server_port[8] = "";
    bool https = false;
};

// The params REQUEST_SCHEME, HTTPS (when on), REMOTE_ADDR, REMOTE_PORT,
// SERVER_ADDR and SERVER_PORT of the client's connection, encoded (`pairs`),
// which write_params copies as they are.
struct Endpoints {
    // The client's connection (look_up's `fd`), or -1: which of this
    // thread's slots write_params keeps the connection's last params in.
    int fd = -1;
    // The six pairs at their largest, a byte per length (each below 128).
    char pairs[2 * 6 + sizeof "REQUEST_SCHEME" + sizeof "HTTPS" + sizeof "https" + sizeof "on" +
               4 * sizeof "REMOTE_ADDR" + 2 * sizeof EndpointTexts::remote_address +
               2 * sizeof EndpointTexts::remote_port];
    std::uint8_t pairs_size = 0;

    // The pairs of both ends, from what the loop noted when it accepted the
    // connection (a syscall only for a connection it did not accept); unix
    // sockets give "unix:" and no port. The remote end and https as
    // `forwarded` says, when given (http::Exchange::forwarded_client()).
    // The same ends give the same pairs: a connection's later requests (and
    // a new connection on the same fd between the same ends) copy them from
    // a per-thread cache instead of writing the numbers again.
    void look_up(int fd, const http::ForwardedClient* forwarded = nullptr);
    // `pairs` from the texts.
    void encode(const EndpointTexts& texts);
    // The value of the pair `name`, or an empty view when there is none.
    std::string_view param(std::string_view name) const;
};

struct ScriptParams {
    std::string_view document_root; // no trailing '/'; ScriptResolver::document_root()
    std::string_view script_name;
    std::string_view script_file; // beneath document_root: ScriptTarget::script_file
    std::string_view path_info;
    std::string_view document_uri;
    std::string_view request_uri;
    std::string_view query;
    std::string_view method;
    std::string_view content_length; // decimal, or empty without a body
    std::string_view server_name;
    std::string_view extra; // extra_params(), encoded
};

// The handler's `params { }`, encoded once; they go last.
std::string extra_params(const std::vector<std::pair<std::string, std::string>>& params);

// Writes BEGIN_REQUEST's PARAMS stream (not its end) for `request`.
//
// A client on a kept connection sends the same head again and again (a
// browser for most of its fields, a load generator for all of them): the
// pairs written for a connection's request are kept, with everything they
// were made from, in a slot of a per-thread table chosen by
// `endpoints.fd`, and a later request whose inputs are the same byte for
// byte (every view of `params`, the request's head as sent and its user, the
// endpoints' pairs) gets a copy of them; a request not as sent (an error
// page's) gets none. Nothing else goes into the pairs,
// so the copy is what writing them anew would send; what decides the inputs
// (the script on disk, the configuration) still runs for every request.
// Pairs written through a flush, or too large for a slot, are not kept.
void write_params(fastcgi::RecordWriter& writer, const http::Request& request,
                  const ScriptParams& params, const Endpoints& endpoints);
// How many of this thread's write_params calls copied kept pairs.
std::uint64_t reused_params();

} // namespace weft::handlers
