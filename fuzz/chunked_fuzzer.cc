// libFuzzer target for the chunked decoder. The input's first byte says how
// many cuts (0-7) and the next bytes where; the rest is a chunked body fed in
// those pieces, as a connection feeds it, and then one byte at a time. Each
// way must decode the same payload, end the same way after the same number
// of bytes, and hand out only views into the input of that call.

#include "http/chunked.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

using namespace weft::http;
using Status = ChunkedDecoder::Status;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

struct Decoded {
    Status status = Status::incomplete;
    std::string payload;
    std::size_t consumed = 0; // up to the end of the body, when done
    std::uint64_t decoded = 0;
    bool operator==(const Decoded&) const = default;
};

Decoded decode(std::string_view encoded, const std::vector<std::size_t>& cuts) {
    ChunkedDecoder decoder;
    Decoded out;
    std::string pending;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : encoded.size();
        pending.append(encoded.substr(from, to - from));
        from = to;
        std::string_view input = pending;
        for (;;) {
            const ChunkedDecoder::Step step = decoder.next(input);
            check(step.consumed <= input.size());
            if (step.status == Status::data) {
                check(!step.data.empty() && step.data.data() >= input.data() &&
                      step.data.data() + step.data.size() == input.data() + step.consumed);
                out.payload.append(step.data);
                out.consumed += step.consumed;
                input.remove_prefix(step.consumed);
                continue;
            }
            if (step.status == Status::incomplete) {
                check(step.consumed == input.size());
                out.consumed += step.consumed;
                input = {};
                break;
            }
            out.status = step.status;
            // `consumed` on an error is not specified: only done's counts.
            out.consumed = step.status == Status::done ? out.consumed + step.consumed : 0;
            out.decoded = decoder.decoded();
            check(out.decoded == out.payload.size());
            // Finished decoders stay finished.
            check(decoder.next(encoded).status == step.status);
            return out;
        }
        pending.assign(input);
    }
    out.decoded = decoder.decoded();
    check(out.decoded == out.payload.size());
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::size_t count = std::min<std::size_t>(data[0] & 7, size - 1);
    const std::string_view encoded(reinterpret_cast<const char*>(data) + 1 + count,
                                   size - 1 - count);
    std::vector<std::size_t> cuts;
    for (std::size_t i = 0; i < count; ++i) cuts.push_back(encoded.size() * data[1 + i] / 256);
    std::sort(cuts.begin(), cuts.end());

    const Decoded whole = decode(encoded, {});
    check(decode(encoded, cuts) == whole);
    if (encoded.size() <= 4096) {
        std::vector<std::size_t> every(encoded.size());
        for (std::size_t i = 0; i < every.size(); ++i) every[i] = i;
        check(decode(encoded, every) == whole);
    }
    if (whole.status == Status::done) check(whole.consumed <= encoded.size());
    return 0;
}
