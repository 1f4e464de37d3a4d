// libFuzzer target for the request-head parser. The input's first two bytes
// choose where to cut the rest into up to three pieces, fed as a connection
// feeds them (the same buffer, growing); the pieces must give exactly what
// the whole gives, and every view of a parsed Request must lie inside the
// input. A chunked body after the head goes through the ChunkedDecoder, and
// an origin-form path through normalize_path. Any disagreement aborts.

#include "http/chunked.hpp"
#include "http/parser.hpp"
#include "http/path.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

using namespace weft::http;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool inside(std::string_view view, std::string_view input) {
    if (view.data() == nullptr) return view.empty();
    return view.data() >= input.data() && view.data() + view.size() <= input.data() + input.size();
}

bool same_view(std::string_view a, std::string_view b) {
    return a.data() == b.data() && a.size() == b.size();
}

bool same_request(const Request& a, const Request& b) {
    if (a.method != b.method || !same_view(a.method_name, b.method_name) ||
        !same_view(a.target, b.target) || !same_view(a.path, b.path) ||
        !same_view(a.query, b.query) || !same_view(a.host, b.host) || a.minor != b.minor ||
        a.keep_alive != b.keep_alive || a.expect_continue != b.expect_continue ||
        a.chunked != b.chunked || a.content_length != b.content_length ||
        a.path_normal != b.path_normal || a.header_count != b.header_count ||
        !same_view(a.head, b.head))
        return false;
    for (std::size_t i = 0; i < a.header_count; ++i)
        if (!same_view(a.headers[i].name, b.headers[i].name) ||
            !same_view(a.headers[i].value, b.headers[i].value))
            return false;
    return true;
}

void check_request(const Request& r, std::string_view head) {
    // The head as sent: from the method (after any empty lines) to the end
    // of what the parser took, every view within it.
    check(r.head.data() == r.method_name.data() &&
          r.head.data() + r.head.size() == head.data() + head.size());
    head = r.head;
    check(inside(r.method_name, head) && inside(r.target, head) && inside(r.path, head) &&
          inside(r.query, head) && inside(r.host, head));
    check(r.header_count <= kMaxHeaders);
    for (std::size_t i = 0; i < r.header_count; ++i)
        check(inside(r.headers[i].name, head) && inside(r.headers[i].value, head) &&
              !r.headers[i].name.empty());
    check(r.minor <= 1);
    check(!(r.chunked && r.content_length != 0));
}

// A normalised path starts with '/', holds no NUL, and has no empty, "." or
// ".." segment (a trailing slash aside); it is raw itself or lies in out. A
// path the parser called normal is raw itself.
void check_path(std::string_view raw, bool parser_says_normal) {
    std::vector<char> out(raw.size());
    const std::optional<std::string_view> path = normalize_path(raw, out.data());
    if (parser_says_normal) check(path && path->size() == raw.size() && *path == raw);
    if (!path) return;
    // Raw itself when it is already normal, else written into out.
    if (path->data() == raw.data())
        check(path->size() == raw.size());
    else
        check(path->data() == out.data());
    check(!path->empty() && path->front() == '/' && path->size() <= raw.size());
    check(path->find('\0') == std::string_view::npos);
    std::size_t start = 1;
    while (start < path->size()) {
        const std::size_t end = std::min(path->find('/', start), path->size());
        const std::string_view segment = path->substr(start, end - start);
        check(end == path->size() || !segment.empty());
        check(segment != "." && segment != "..");
        start = end + 1;
    }
}

void decode_body(std::string_view body) {
    ChunkedDecoder decoder;
    std::string_view input = body;
    for (;;) {
        const ChunkedDecoder::Step step = decoder.next(input);
        check(step.consumed <= input.size());
        if (step.status == ChunkedDecoder::Status::data) {
            check(!step.data.empty() && inside(step.data, input));
            input.remove_prefix(step.consumed);
            continue;
        }
        if (step.status == ChunkedDecoder::Status::incomplete) check(step.consumed == input.size());
        return;
    }
}

void run(std::string_view text, std::size_t cut1, std::size_t cut2, ParserLimits limits) {
    static auto whole_request = std::make_unique<Request>();
    static auto pieces_request = std::make_unique<Request>();

    RequestParser whole(limits);
    const ParseStatus status = whole.parse(text, *whole_request);

    RequestParser pieces(limits);
    ParseStatus piece_status = ParseStatus::incomplete;
    for (std::size_t end : {cut1, cut2, text.size()}) {
        piece_status = pieces.parse(text.substr(0, end), *pieces_request);
        if (piece_status != ParseStatus::incomplete) break;
    }
    check(piece_status == status);
    check(pieces.error_status() == whole.error_status());
    check(pieces.head_size() == whole.head_size());

    if (status == ParseStatus::error) {
        const int code = whole.error_status();
        check(code == 400 || code == 414 || code == 431 || code == 501 || code == 505);
        check(!whole.error_reason().empty());
        return;
    }
    if (status != ParseStatus::done) {
        check(whole.head_size() == 0);
        return;
    }
    const std::size_t head_size = whole.head_size();
    check(head_size <= text.size() && head_size <= limits.max_head);
    const std::string_view head = text.substr(0, head_size);
    check(head.size() >= 4 && head.substr(head.size() - 4) == "\r\n\r\n");
    check(same_request(*whole_request, *pieces_request));
    check_request(*whole_request, head);
    if (!whole_request->path.empty() && whole_request->path.front() == '/')
        check_path(whole_request->path, whole_request->path_normal);
    else
        check(!whole_request->path_normal);
    if (whole_request->chunked) decode_body(text.substr(head_size));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
    // Two cuts, in order: the first a fraction of the text, the second a
    // fraction of what follows it.
    const std::size_t cut1 = text.size() * data[0] / 256;
    const std::size_t cut2 = cut1 + (text.size() - cut1) * data[1] / 256;
    run(text, cut1, cut2, ParserLimits{});
    run(text, cut1, cut2, ParserLimits{40, 160}); // small limits reach 414 and 431
    return 0;
}
