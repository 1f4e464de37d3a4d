// libFuzzer target for the PROXY protocol header parser. The input is what a
// connection received from its first byte. The parser keeps no state, so each
// invariant is a relation between its answers on prefixes of one input:
// - done consumes at most the input, at most a version's maximum, and its
//   answer is the same on exactly the header's bytes;
// - every shorter prefix of a done header is incomplete (a header split
//   over reads is never refused, nor accepted early);
// - a prefix that is done or invalid decides the whole input the same way
//   (fed in two pieces, the answer does not change);
// - a client address is IPv4 or IPv6 with its own length.

#include "http/proxy_header.hpp"

#include <netinet/in.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

using namespace weft::http;
using Status = ProxyHeader::Status;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool same(const ProxyHeader& a, const ProxyHeader& b) {
    return a.status == b.status && a.consumed == b.consumed && a.has_client == b.has_client &&
           a.tls == b.tls && a.client_length == b.client_length &&
           std::memcmp(&a.client, &b.client, sizeof a.client) == 0;
}

void check_fields(const ProxyHeader& h) {
    if (h.status != Status::done) {
        check(h.consumed == 0 && !h.has_client && !h.tls);
        return;
    }
    check(h.consumed > 0);
    if (!h.has_client) return check(h.client_length == 0);
    check((h.client.ss_family == AF_INET && h.client_length == sizeof(sockaddr_in)) ||
          (h.client.ss_family == AF_INET6 && h.client_length == sizeof(sockaddr_in6)));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const ProxyHeader whole = parse_proxy_header(input);
    check_fields(whole);

    if (whole.status == Status::done) {
        check(whole.consumed <= input.size());
        check(whole.consumed <= (input[0] == 'P' ? ProxyHeader::kMaxV1 : ProxyHeader::kMaxV2));
        check(same(parse_proxy_header(input.substr(0, whole.consumed)), whole));
    }

    // Every prefix up to 512 bytes, then 64 spread over the rest.
    const std::size_t step = input.size() <= 512 ? 1 : input.size() / 64;
    for (std::size_t n = 0; n < input.size(); n += (n < 512 ? 1 : step)) {
        const ProxyHeader part = parse_proxy_header(input.substr(0, n));
        check_fields(part);
        if (whole.status == Status::done && n < whole.consumed)
            check(part.status == Status::incomplete);
        if (part.status == Status::done) check(same(part, whole));
        if (part.status == Status::invalid) check(whole.status == Status::invalid);
    }
    return 0;
}
