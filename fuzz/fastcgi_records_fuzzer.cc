// libFuzzer target for what comes back from a FastCGI backend: the record
// reader, then the CGI head parser over the STDOUT bytes. The input's first
// byte chooses where to cut the rest (a fraction of its length); the rest is
// the stream, fed whole, in those two pieces and (when short) byte by byte.
// Each way must give the same STDOUT and STDERR bytes, the same end or the
// same error, with every view inside the input of its call. The STDOUT bytes
// then go to a CgiHead with a small buffer and one with a large buffer, as
// the reader handed them out and all at once: the pieces must give what the
// whole gives, and a head that fits the small buffer must parse alike in the
// large one, every field's kind what its name says (compared the slow
// way). Any disagreement aborts.

#include "fastcgi/cgi_head.hpp"
#include "fastcgi/record.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

using namespace weft::fastcgi;
using Kind = RecordReader::Kind;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool inside(std::string_view view, const char* begin, std::size_t size) {
    if (view.empty()) return true;
    return view.data() >= begin && view.data() + view.size() <= begin + size;
}

// The kind a field's name has, found the slow way (a lower-cased copy and
// whole compares), to check the parser's word compares against.
FieldKind expected_kind(std::string_view name) {
    std::string lower(name);
    for (char& c : lower)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (lower == "status") return FieldKind::status;
    if (lower == "location") return FieldKind::location;
    if (lower == "content-type") return FieldKind::content_type;
    if (lower == "content-length") return FieldKind::content_length;
    if (lower == "connection" || lower == "keep-alive" || lower == "transfer-encoding")
        return FieldKind::hop_by_hop;
    if (lower == "x-accel-buffering") return FieldKind::x_accel_buffering;
    if (lower.size() > 8 && lower.compare(0, 8, "x-accel-") == 0) return FieldKind::x_accel;
    return FieldKind::other;
}

struct Read {
    std::vector<std::pair<Kind, std::string>> data; // adjacent pieces of a kind joined
    std::vector<std::string> stdout_pieces;         // as they were handed out
    bool ended = false;
    std::uint32_t app_status = 0;
    ProtocolStatus protocol = ProtocolStatus::request_complete;
    std::string error;

    bool same(const Read& other) const {
        return data == other.data && ended == other.ended && app_status == other.app_status &&
               protocol == other.protocol && error == other.error;
    }
};

// Feeds `stream` cut at `cuts` (ascending), unconsumed bytes kept in front
// of the next piece, as a connection does.
Read read(std::string_view stream, const std::vector<std::size_t>& cuts) {
    RecordReader reader;
    Read out;
    std::string pending;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        const std::size_t to = i < cuts.size() ? cuts[i] : stream.size();
        pending.append(stream.substr(from, to - from));
        from = to;
        std::string_view input = pending;
        for (;;) {
            std::size_t consumed = ~std::size_t{0};
            const RecordReader::Item item = reader.next(input, consumed);
            if (item.kind == Kind::error) {
                check(item.error != nullptr && !reader.ended());
                out.error = item.error;
                std::size_t again = 0;
                check(reader.next(stream, again).kind == Kind::error);
                return out;
            }
            check(consumed <= input.size());
            if (item.kind == Kind::need_more) {
                check(consumed == input.size());
                input = {};
                break;
            }
            if (item.kind == Kind::end_request) {
                check(!out.ended && reader.ended());
                out.ended = true;
                out.app_status = item.app_status;
                out.protocol = item.protocol_status;
            } else {
                check(item.kind == Kind::stdout_data || item.kind == Kind::stderr_data);
                check(!out.ended && !reader.ended());
                check(!item.data.empty() && inside(item.data, input.data(), consumed));
                if (out.data.empty() || out.data.back().first != item.kind)
                    out.data.emplace_back(item.kind, "");
                out.data.back().second.append(item.data);
                if (item.kind == Kind::stdout_data) out.stdout_pieces.emplace_back(item.data);
            }
            input.remove_prefix(consumed);
        }
        pending.assign(input);
    }
    return out;
}

struct Head {
    CgiHead::Status status = CgiHead::Status::incomplete;
    std::string error;
    std::size_t body_at = 0; // where the body starts in the STDOUT bytes, when done
    int code = 0;
    std::string reason, location, content_type;
    bool has_status = false, local_redirect = false;
    std::uint64_t content_length = CgiHead::kNoLength;
    std::vector<std::pair<std::string, std::string>> fields;

    bool operator==(const Head&) const = default;
};

bool is_token(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

Head parse_head(const std::vector<std::string>& pieces, std::size_t capacity) {
    std::vector<char> buffer(capacity);
    CgiHead head(buffer.data(), capacity);
    Head out;
    std::size_t offset = 0;
    for (const std::string& piece : pieces) {
        std::size_t consumed = ~std::size_t{0};
        out.status = head.feed(piece, consumed);
        if (out.status == CgiHead::Status::incomplete) {
            check(consumed == piece.size());
            offset += piece.size();
            continue;
        }
        if (out.status == CgiHead::Status::error) {
            check(head.error() != nullptr);
            out.error = head.error();
            return out;
        }
        check(consumed <= piece.size());
        out.body_at = offset + consumed;
        break;
    }
    if (out.status != CgiHead::Status::done) return out;

    check(out.body_at <= capacity);
    const char* b = buffer.data();
    out.code = head.status();
    check(out.code >= 200 && out.code <= 599);
    out.has_status = head.has_status();
    out.local_redirect = head.local_redirect();
    out.reason = head.reason();
    out.location = head.location();
    out.content_type = head.content_type();
    out.content_length = head.content_length();
    check(inside(head.reason(), b, capacity) && inside(head.location(), b, capacity) &&
          inside(head.content_type(), b, capacity));
    if (out.local_redirect)
        check(!out.has_status && out.code == 200 && out.location[0] == '/' &&
              out.location.substr(0, 2) != "//");
    if (!out.has_status && !out.location.empty() && !out.local_redirect) check(out.code == 302);
    if (!out.has_status) check(out.reason.empty());
    check(head.field_count() <= CgiHead::kMaxFields);
    for (std::size_t i = 0; i < head.field_count(); ++i) {
        const CgiField& f = head.fields()[i];
        check(!f.name.empty() && inside(f.name, b, capacity) && inside(f.value, b, capacity));
        for (char c : f.name) check(is_token(c));
        check(f.kind == expected_kind(f.name) && f.kind != FieldKind::status);
        for (char c : f.value) {
            const auto u = static_cast<unsigned char>(c);
            check(c == '\t' || (u >= 0x20 && u != 0x7f));
        }
        if (!f.value.empty()) check(f.value.front() != ' ' && f.value.back() != ' ');
        out.fields.emplace_back(f.name, f.value);
    }
    // Past done, nothing more is taken.
    std::size_t consumed = 1;
    check(head.feed("x", consumed) == CgiHead::Status::done && consumed == 0);
    return out;
}

void check_head(const Read& read) {
    if (read.stdout_pieces.empty()) return;
    std::string whole;
    for (const std::string& piece : read.stdout_pieces) whole += piece;
    const Head small = parse_head(read.stdout_pieces, 64);
    check(parse_head({whole}, 64) == small);
    const Head large = parse_head(read.stdout_pieces, 16384);
    check(parse_head({whole}, 16384) == large);
    if (small.status == CgiHead::Status::done) check(large == small);
    if (large.status == CgiHead::Status::done) check(large.body_at <= whole.size());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::size_t cut = stream.size() * data[0] / 256;

    const Read whole = read(stream, {});
    check(read(stream, {cut}).same(whole));
    if (stream.size() <= 2048) {
        std::vector<std::size_t> every(stream.size());
        for (std::size_t i = 0; i < every.size(); ++i) every[i] = i;
        check(read(stream, every).same(whole));
    }
    check_head(whole);
    return 0;
}
