#include "fastcgi/record.hpp"

#include "util/ascii.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace weft::fastcgi {

namespace {

// FCGI_RESPONDER, the role of BEGIN_REQUEST's body.
constexpr std::uint16_t kResponder = 1;
// FCGI_KEEP_CONN, BEGIN_REQUEST's only flag.
constexpr std::uint8_t kKeepConn = 1;
// A PARAMS name or value of 2^31 bytes or more has no length encoding.
constexpr std::size_t kMaxPairLength = std::size_t{1} << 31;

std::uint16_t be16(const char* p) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(p[0]) << 8 |
                                      static_cast<unsigned char>(p[1]));
}

std::uint32_t be32(const char* p) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(p[0])) << 24 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(p[1])) << 16 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(p[2])) << 8 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(p[3]));
}

} // namespace

void encode_header(char* out, RecordType type, std::uint16_t request_id,
                   std::uint16_t content_length, std::uint8_t padding_length) {
    out[0] = static_cast<char>(kVersion);
    out[1] = static_cast<char>(type);
    out[2] = static_cast<char>(request_id >> 8);
    out[3] = static_cast<char>(request_id & 0xff);
    out[4] = static_cast<char>(content_length >> 8);
    out[5] = static_cast<char>(content_length & 0xff);
    out[6] = static_cast<char>(padding_length);
    out[7] = 0;
}

// --- RecordWriter -----------------------------------------------------------
//
// Records go out unpadded (paddingLength 0): the spec only recommends
// alignment, and PHP-FPM and every other backend read unaligned records.
//
// The open record, if any, is the last one in the buffer: its header sits at
// record_ with a content length filled in only by close_record(), which
// runs before every flush. So a body's bytes fill the buffer to the last
// byte, and a STDIN record is cut where the buffer or the 65535-byte content
// limit ends. A pair is never cut (record.hpp): one that does not fit the
// open record starts a record of its own, its header written at once with
// the pair's length (owed_), which goes on through flushes and needs no
// closing; it fills the buffer to the last byte too. A record left with no
// content is dropped rather than sent, since an empty PARAMS or STDIN record
// would end its stream.

RecordWriter::RecordWriter(char* buffer, std::size_t capacity, Flush flush, void* context,
                           std::uint16_t request_id)
    : buffer_(buffer), capacity_(capacity), flush_(flush), context_(context),
      request_id_(request_id) {
    assert(capacity >= 64 && "room for a BEGIN_REQUEST and more");
}

void RecordWriter::begin_request(bool keep_conn) {
    close_record();
    if (!make_room(kHeaderSize + 8)) return;
    char* out = buffer_ + size_;
    encode_header(out, RecordType::begin_request, request_id_, 8, 0);
    const char body[8] = {static_cast<char>(kResponder >> 8), static_cast<char>(kResponder & 0xff),
                          static_cast<char>(keep_conn ? kKeepConn : 0)};
    std::memcpy(out + kHeaderSize, body, sizeof body);
    size_ += kHeaderSize + 8;
}

void encode_pair(std::string& out, std::string_view name, std::string_view value) {
    char lengths[8];
    char* end = put_length(put_length(lengths, name.size()), value.size());
    out.append(lengths, static_cast<std::size_t>(end - lengths));
    out.append(name);
    out.append(value);
}

void RecordWriter::encoded_params_in_pieces(std::string_view pairs) {
    if (error_ != 0) return;
    keep_together(pairs.size());
    append(pairs.data(), pairs.size());
}

void RecordWriter::param_in_pieces(std::string_view name, std::string_view value) {
    if (error_ != 0 || name.size() >= kMaxPairLength || value.size() >= kMaxPairLength) return;
    keep_together(length_size(name.size()) + length_size(value.size()) + name.size() +
                  value.size());
    append_length(name.size());
    append_length(value.size());
    append(name.data(), name.size());
    append(value.data(), value.size());
}

void RecordWriter::param(std::string_view name, std::span<const std::string_view> parts) {
    std::size_t value_size = 0;
    for (std::string_view part : parts) value_size += part.size();
    if (char* out = pair_room(name.size(), value_size)) {
        out = put_bytes(out, name);
        for (std::string_view part : parts) out = put_bytes(out, part);
        return;
    }
    if (error_ != 0 || name.size() >= kMaxPairLength || value_size >= kMaxPairLength) return;
    keep_together(length_size(name.size()) + length_size(value_size) + name.size() + value_size);
    append_length(name.size());
    append_length(value_size);
    append(name.data(), name.size());
    for (std::string_view part : parts) append(part.data(), part.size());
}

void RecordWriter::header_param(std::string_view field_name,
                                std::span<const std::string_view> values,
                                std::string_view separator) {
    constexpr std::string_view prefix = "HTTP_";
    std::size_t value_size = 0;
    for (std::string_view value : values) value_size += value.size();
    if (values.size() > 1) value_size += separator.size() * (values.size() - 1);
    const std::size_t name_size = prefix.size() + field_name.size();
    if (char* out = pair_room(name_size, value_size)) {
        std::memcpy(out, prefix.data(), prefix.size());
        ascii::put_cgi_name(out + prefix.size(), field_name.data(), field_name.size());
        out += prefix.size() + field_name.size();
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (i > 0) out = put_bytes(out, separator);
            out = put_bytes(out, values[i]);
        }
        return;
    }
    if (error_ != 0 || name_size >= kMaxPairLength || value_size >= kMaxPairLength) return;

    keep_together(length_size(name_size) + length_size(value_size) + name_size + value_size);
    append_length(name_size);
    append_length(value_size);
    append(prefix.data(), prefix.size());
    // The name is rewritten through a small stack buffer, a piece at a time.
    char piece[64];
    for (std::size_t at = 0; at < field_name.size(); at += sizeof piece) {
        const std::size_t n = std::min(sizeof piece, field_name.size() - at);
        ascii::put_cgi_name(piece, field_name.data() + at, n);
        append(piece, n);
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i > 0) append(separator.data(), separator.size());
        append(values[i].data(), values[i].size());
    }
}

std::string_view RecordWriter::params_since(Mark mark) const {
    if (error_ != 0 || owed_ != 0 || flushes_ != mark.flushes || type_ != RecordType::params)
        return {};
    // In the record open at the mark, or in one that began there.
    if (mark.record != SIZE_MAX ? record_ != mark.record : record_ != mark.size) return {};
    const std::size_t from = mark.record != SIZE_MAX ? mark.size : mark.size + kHeaderSize;
    return {buffer_ + from, size_ - from};
}

void RecordWriter::end_params() {
    end_stream(RecordType::params);
}

void RecordWriter::stdin_bytes(std::string_view bytes) {
    if (error_ != 0) return;
    open(RecordType::stdin_);
    append(bytes.data(), bytes.size());
}

std::span<char> RecordWriter::stdin_space(std::size_t want) {
    if (error_ != 0 || want == 0) return {};
    open(RecordType::stdin_);
    const std::size_t room = content_room();
    space_ = std::min(want, room);
    return {buffer_ + size_, space_};
}

void RecordWriter::commit_stdin(std::size_t size) {
    if (error_ != 0) return;
    assert(size <= space_ && type_ == RecordType::stdin_ && "commit what stdin_space gave");
    size_ += size;
    space_ = 0;
}

void RecordWriter::end_stdin() {
    end_stream(RecordType::stdin_);
}

void RecordWriter::abort_request() {
    close_record();
    if (!make_room(kHeaderSize)) return;
    encode_header(buffer_ + size_, RecordType::abort_request, request_id_, 0, 0);
    size_ += kHeaderSize;
}

int RecordWriter::flush() {
    if (error_ != 0) return error_;
    close_record();
    if (size_ == 0) return 0;
    ++flushes_;
    const int result = flush_(context_, buffer_, size_);
    if (result != 0) {
        error_ = result;
        return error_;
    }
    size_ = 0;
    return 0;
}

std::size_t RecordWriter::buffered() const {
    // An open record still without content is not going to be sent.
    if (record_ != SIZE_MAX && size_ == record_ + kHeaderSize) return record_;
    return size_;
}

void RecordWriter::open(RecordType type) {
    if (record_ != SIZE_MAX && type_ != type) close_record();
    type_ = type;
}

void RecordWriter::keep_together(std::size_t size) {
    open(RecordType::params);
    // None (an empty header would end the stream), or more than a record
    // holds: cut where records end, nothing better exists.
    if (size == 0 || size > kMaxContent) return;
    if (record_ != SIZE_MAX && capacity_ - size_ >= size &&
        size_ - record_ - kHeaderSize + size <= kMaxContent)
        return; // the open record takes them
    close_record();
    if (capacity_ - size_ >= kHeaderSize + size) return; // a new record here takes them
    // A record of their own, its header first (at least a byte of content
    // behind it, as content_room() leaves room for).
    if (!make_room(kHeaderSize + 1)) return;
    encode_header(buffer_ + size_, RecordType::params, request_id_,
                  static_cast<std::uint16_t>(size), 0);
    size_ += kHeaderSize;
    owed_ = size;
}

void RecordWriter::close_record() {
    if (record_ == SIZE_MAX) return;
    const std::size_t content = size_ - record_ - kHeaderSize;
    if (content == 0)
        size_ = record_;
    else
        encode_header(buffer_ + record_, type_, request_id_, static_cast<std::uint16_t>(content),
                      0);
    record_ = SIZE_MAX;
}

void RecordWriter::end_stream(RecordType type) {
    close_record();
    if (!make_room(kHeaderSize)) return;
    encode_header(buffer_ + size_, type, request_id_, 0, 0);
    size_ += kHeaderSize;
}

std::size_t RecordWriter::content_room() {
    if (error_ != 0) return 0;
    if (owed_ != 0) return make_room(1) ? std::min(capacity_ - size_, owed_) : 0;
    if (record_ != SIZE_MAX && size_ - record_ - kHeaderSize == kMaxContent) close_record();
    if (record_ == SIZE_MAX || size_ == capacity_) {
        // A new record needs its header and at least a byte of content.
        close_record();
        if (!make_room(kHeaderSize + 1)) return 0;
        record_ = size_;
        size_ += kHeaderSize;
    }
    const std::size_t content = size_ - record_ - kHeaderSize;
    return std::min(capacity_ - size_, kMaxContent - content);
}

void RecordWriter::append(const char* bytes, std::size_t size) {
    while (size > 0) {
        const std::size_t n = std::min(size, content_room());
        if (n == 0) return; // the flush failed
        std::memcpy(buffer_ + size_, bytes, n);
        size_ += n;
        owed_ -= std::min(owed_, n);
        bytes += n;
        size -= n;
    }
}

void RecordWriter::append_length(std::size_t length) {
    if (length_size(length) == 1) {
        const char byte = static_cast<char>(length);
        append(&byte, 1);
        return;
    }
    const char bytes[4] = {static_cast<char>(length >> 24 | 0x80),
                           static_cast<char>(length >> 16 & 0xff),
                           static_cast<char>(length >> 8 & 0xff), static_cast<char>(length & 0xff)};
    append(bytes, sizeof bytes);
}

bool RecordWriter::make_room(std::size_t size) {
    if (error_ != 0) return false;
    if (capacity_ - size_ >= size) return true;
    close_record();
    if (size_ > 0) {
        ++flushes_;
        const int result = flush_(context_, buffer_, size_);
        if (result != 0) {
            error_ = result;
            return false;
        }
        size_ = 0;
    }
    return capacity_ >= size;
}

// --- RecordReader -----------------------------------------------------------

RecordReader::Item RecordReader::fail(const char* why) {
    state_ = State::failed;
    error_ = why;
    Item item;
    item.kind = Kind::error;
    item.error = why;
    return item;
}

RecordReader::Item RecordReader::next(std::string_view input, std::size_t& consumed) {
    consumed = 0;
    if (state_ == State::failed) return fail(error_);
    if (state_ == State::ended) {
        if (input.empty()) return {};
        return fail("bytes after END_REQUEST");
    }
    std::size_t at = 0;
    // The usual: whole records where they are, each in one step, its
    // padding with it (a backend's answer mostly comes in one read).
    while (state_ == State::header && have_ == 0 && input.size() - at >= kHeaderSize) {
        const char* const header = input.data() + at;
        at += kHeaderSize;
        consumed = at;
        if (const char* error = start_record(header)) return fail(error);
        const std::size_t left = input.size() - at;
        if (state_ == State::content && left >= content_ + padding_) {
            const Item item = content_item({input.data() + at, content_});
            consumed = at + content_ + padding_;
            content_ = padding_ = 0;
            state_ = State::header;
            return item;
        }
        if (state_ == State::end_body && left >= 8u + padding_) {
            end_body(input.data() + at);
            consumed = at + 8 + padding_;
            padding_ = 0;
            state_ = State::ended;
            return ended_item();
        }
        if (state_ != State::header) break; // the rest of it to come: below
    }
    while (at < input.size()) {
        const std::size_t left = input.size() - at;
        switch (state_) {
        case State::header: {
            const char* header = input.data() + at;
            if (have_ == 0 && left >= kHeaderSize) {
                at += kHeaderSize; // whole where it is: read in place
            } else {
                const std::size_t n = std::min<std::size_t>(kHeaderSize - have_, left);
                std::memcpy(partial_ + have_, header, n);
                have_ = static_cast<std::uint8_t>(have_ + n);
                at += n;
                consumed = at;
                if (have_ < kHeaderSize) break;
                have_ = 0;
                header = partial_;
            }
            consumed = at;
            if (const char* error = start_record(header)) return fail(error);
            break;
        }
        case State::content: {
            const std::size_t n = std::min(content_, left);
            content_ -= n;
            if (content_ == 0) state_ = padding_ > 0 ? State::padding : State::header;
            consumed = at + n;
            return content_item({input.data() + at, n});
        }
        case State::padding:
        case State::end_padding: {
            const std::size_t n = std::min(padding_, left);
            padding_ -= n;
            at += n;
            consumed = at;
            if (padding_ > 0) break;
            if (state_ == State::padding) {
                state_ = State::header;
                break;
            }
            state_ = State::ended;
            return ended_item();
        }
        case State::end_body: {
            const char* body = input.data() + at;
            if (have_ == 0 && left >= 8) {
                at += 8; // whole where it is: read in place
            } else {
                const std::size_t n = std::min<std::size_t>(8 - have_, left);
                std::memcpy(partial_ + have_, body, n);
                have_ = static_cast<std::uint8_t>(have_ + n);
                at += n;
                consumed = at;
                if (have_ < 8) break;
                have_ = 0;
                body = partial_;
            }
            consumed = at;
            end_body(body);
            if (padding_ > 0) {
                state_ = State::end_padding;
                break;
            }
            state_ = State::ended;
            return ended_item();
        }
        case State::ended:
            return fail("bytes after END_REQUEST");
        case State::failed:
            return fail(error_);
        }
    }
    consumed = input.size();
    return {};
}

// Checks a whole record header and sets up its content.
const char* RecordReader::start_record(const char* header) {
    if (static_cast<std::uint8_t>(header[0]) != kVersion) return "not a FastCGI 1 record";
    const auto type = static_cast<RecordType>(header[1]);
    if (type != RecordType::stdout_ && type != RecordType::stderr_ &&
        type != RecordType::end_request)
        return "a record type a responder's backend does not send";
    if (be16(header + 2) != request_id_) return "a record for another request id";
    const std::size_t content = be16(header + 4);
    type_ = type;
    padding_ = static_cast<std::uint8_t>(header[6]);
    if (type == RecordType::end_request) {
        if (content != 8) return "an END_REQUEST whose body is not 8 bytes";
        state_ = State::end_body;
        return nullptr;
    }
    // An empty STDOUT record ends the stream; an empty STDERR is allowed
    // too. Neither yields an item: data items are never empty.
    content_ = content;
    state_ = content > 0 ? State::content : padding_ > 0 ? State::padding : State::header;
    return nullptr;
}

RecordReader::Item RecordReader::content_item(std::string_view data) const {
    Item item;
    item.kind = type_ == RecordType::stdout_ ? Kind::stdout_data : Kind::stderr_data;
    item.data = data;
    return item;
}

void RecordReader::end_body(const char* body) {
    app_status_ = be32(body);
    protocol_status_ = static_cast<ProtocolStatus>(static_cast<std::uint8_t>(body[4]));
}

RecordReader::Item RecordReader::ended_item() const {
    Item item;
    item.kind = Kind::end_request;
    item.app_status = app_status_;
    item.protocol_status = protocol_status_;
    return item;
}

void RecordReader::reset() {
    state_ = State::header;
    type_ = RecordType::stdout_;
    have_ = 0;
    content_ = 0;
    padding_ = 0;
    app_status_ = 0;
    protocol_status_ = ProtocolStatus::request_complete;
    error_ = nullptr;
}

} // namespace weft::fastcgi
