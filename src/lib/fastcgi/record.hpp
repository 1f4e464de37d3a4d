#pragma once
// The FastCGI 1.0 record layer: what weft writes to a backend and how it
// reads what comes back.
//
// A record is an 8-byte header (version 1, type, request id, content length,
// padding length), the content and the padding. weft speaks one request at a
// time per connection (request id 1), as the responder role.
//
// Writing: RecordWriter fills a caller's buffer with records and hands full
// buffers to a flush callback (which writes them to the backend and may wait
// there), so a request of any size goes out through a fixed buffer:
// BEGIN_REQUEST, the PARAMS stream (name-value pairs with 1- or 4-byte
// lengths), the empty PARAMS record, STDIN bytes, the empty STDIN record. A
// GET is one buffer and one write. Records go out unpadded.
//
// Each PARAMS record holds whole pairs: PHP-FPM parses every record alone and
// drops the connection on a pair cut over two (the spec calls PARAMS a
// stream; PHP-FPM's fastcgi.c does not). A pair that does not fit what is
// left of the buffer goes in a record of its own whose header goes first,
// its length known, and its bytes through as many flushes as they take. Only
// a pair longer than a record (65535 bytes) is cut over records.
//
// Reading: RecordReader takes the bytes as they arrive, in pieces of any
// size, and hands back STDOUT and STDERR content as it comes (a record need
// not be whole to pass its first bytes on), then END_REQUEST. It is strict:
// another version, another request id, a type a responder's backend must not
// send, an END_REQUEST that is not 8 bytes, or anything after END_REQUEST is
// an error, and the connection is not to be trusted again.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace weft::fastcgi {

inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderSize = 8;
inline constexpr std::size_t kMaxContent = 65535;
inline constexpr std::uint16_t kRequestId = 1;

enum class RecordType : std::uint8_t {
    begin_request = 1,
    abort_request = 2,
    end_request = 3,
    params = 4,
    stdin_ = 5,
    stdout_ = 6,
    stderr_ = 7,
    data = 8,
    get_values = 9,
    get_values_result = 10,
    unknown_type = 11,
};

// END_REQUEST's protocolStatus.
enum class ProtocolStatus : std::uint8_t {
    request_complete = 0,
    cant_mpx_conn = 1,
    overloaded = 2,
    unknown_role = 3,
};

// Writes the 8-byte header of a record at `out`.
void encode_header(char* out, RecordType type, std::uint16_t request_id,
                   std::uint16_t content_length, std::uint8_t padding_length);

// The bytes a name or value length takes in a PARAMS pair: 1 below 128, else 4.
constexpr std::size_t length_size(std::size_t length) {
    return length < 128 ? 1 : 4;
}

// Copies `bytes` to `out`: where the next byte goes. (An empty view may
// have a null data(), which memcpy must not see.)
inline char* put_bytes(char* out, std::string_view bytes) {
    if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
    return out + bytes.size();
}

// Writes a PARAMS length at `out`: where the next byte goes.
inline char* put_length(char* out, std::size_t length) {
    if (length < 128) {
        *out = static_cast<char>(length);
        return out + 1;
    }
    out[0] = static_cast<char>(length >> 24 | 0x80);
    out[1] = static_cast<char>(length >> 16 & 0xff);
    out[2] = static_cast<char>(length >> 8 & 0xff);
    out[3] = static_cast<char>(length & 0xff);
    return out + 4;
}

// Appends one PARAMS pair, encoded, to `out` (for RecordWriter::encoded_params).
void encode_pair(std::string& out, std::string_view name, std::string_view value);

class RecordWriter {
public:
    // Writes out `size` bytes (all of them) and returns 0, or -errno.
    using Flush = int (*)(void* context, const char* bytes, std::size_t size);

    // Records go into buffer[0, capacity) (capacity >= 64); when it is full
    // they go to `flush`. The first flush error sticks: later calls do
    // nothing and flush() returns it.
    RecordWriter(char* buffer, std::size_t capacity, Flush flush, void* context,
                 std::uint16_t request_id = kRequestId);
    RecordWriter(const RecordWriter&) = delete;
    RecordWriter& operator=(const RecordWriter&) = delete;

    // BEGIN_REQUEST for the responder role; keep_conn asks the backend to
    // keep the connection open after the request (FCGI_KEEP_CONN).
    void begin_request(bool keep_conn);

    // One PARAMS name-value pair. Names or values of 2^31 bytes or more are
    // not sent (nothing can be that large here).
    [[gnu::always_inline]] void param(std::string_view name, std::string_view value) {
        // Inline: the names are literals, so their copies become moves.
        if (char* out = pair_room(name.size(), value.size())) {
            put_bytes(put_bytes(out, name), value);
            return;
        }
        param_in_pieces(name, value);
    }
    // One pair whose value is `parts` one after the other (a root and a
    // path), without joining them first.
    void param(std::string_view name, std::span<const std::string_view> parts);
    // The pair for a request header field: the name is "HTTP_" and the field
    // name upper-cased with '-' as '_'; the value is `values` joined by
    // `separator` (repeated fields merged into one).
    void header_param(std::string_view field_name, std::span<const std::string_view> values,
                      std::string_view separator);
    // Pairs encoded beforehand (encode_pair), as they are: params that are
    // the same for every request cost one copy.
    void encoded_params(std::string_view pairs) {
        // Inline: most go whole into the open record, one copy.
        if (char* out = params_room(pairs.size())) {
            put_bytes(out, pairs);
            return;
        }
        encoded_params_in_pieces(pairs);
    }
    // Pairs params_since() gave, copied as they are, when they all fit the
    // open PARAMS record (or a new one) in the buffer as it stands: no
    // flush, so the records are the ones writing them pair by pair makes.
    // Else false, and nothing is written.
    bool encoded_params_in_place(std::string_view pairs) {
        char* out = params_room(pairs.size());
        if (!out) return false;
        put_bytes(out, pairs);
        return true;
    }
    // Room for `size` bytes of whole pairs, to be written there by the
    // caller, when they all fit the open PARAMS record (or a new one) in the
    // buffer as it stands; else nullptr, and nothing is taken. Pairs whose
    // sizes are known first go in with one check instead of one each.
    char* params_space(std::size_t size) { return params_room(size); }
    // Where the pairs appended next begin, for params_since().
    struct Mark {
        std::size_t record; // the open record's header then, if any
        std::size_t size;
        std::uint32_t flushes;
    };
    Mark mark() const { return {record_, size_, flushes_}; }
    // The pairs appended since `mark`, when all of them are still in the
    // buffer, in the one PARAMS record that was open at the mark or began
    // there; else (a flush came between, or a record was cut) empty.
    std::string_view params_since(Mark mark) const;

    // The empty PARAMS record that ends the stream.
    void end_params();

    // STDIN: bytes of the request body, as records.
    void stdin_bytes(std::string_view bytes);
    // Room to read body bytes into, in place, inside a STDIN record: at least
    // 1 byte (flushing first when the buffer is full), at most `want` (none
    // for a `want` of 0 or after an error)...
    std::span<char> stdin_space(std::size_t want);
    // ...and how many of them were filled.
    void commit_stdin(std::size_t size);
    // The empty STDIN record that ends the body.
    void end_stdin();

    // ABORT_REQUEST.
    void abort_request();

    // Hands everything buffered to the flush callback: 0 or the sticky error.
    int flush();
    int error() const { return error_; }
    // Bytes waiting in the buffer.
    std::size_t buffered() const;

private:
    void open(RecordType type);
    // Makes the next `size` bytes appended, whole pairs, go in one PARAMS
    // record (unless no record holds so many).
    void keep_together(std::size_t size);
    void close_record();
    void end_stream(RecordType type);
    std::size_t content_room();
    void append(const char* bytes, std::size_t size);
    // Where a whole pair's name and value go, its lengths written, when the
    // open PARAMS record has room for all of it; else nullptr.
    [[gnu::always_inline]] char* pair_room(std::size_t name_size, std::size_t value_size) {
        const std::size_t pair =
            length_size(name_size) + length_size(value_size) + name_size + value_size;
        char* out = params_room(pair);
        return out ? put_length(put_length(out, name_size), value_size) : nullptr;
    }
    // Where `size` bytes of whole pairs go when the open PARAMS record has
    // room for all of them, or, with no record open, a new one and its
    // header do (taken); else nullptr.
    [[gnu::always_inline]] char* params_room(std::size_t size) {
        if (error_ != 0) return nullptr;
        if (record_ == SIZE_MAX) {
            // Not behind a record whose header went ahead (owed_).
            if (owed_ != 0 || size == 0 || size > kMaxContent ||
                capacity_ - size_ < kHeaderSize + size)
                return nullptr;
            type_ = RecordType::params;
            record_ = size_;
            size_ += kHeaderSize;
        } else if (type_ != RecordType::params || capacity_ - size_ < size ||
                   size_ - record_ - kHeaderSize + size > kMaxContent) {
            return nullptr;
        }
        char* out = buffer_ + size_;
        size_ += size;
        return out;
    }
    // Pairs where they may be cut over records and flushes.
    void encoded_params_in_pieces(std::string_view pairs);
    // A pair where it may be cut over records and flushes.
    void param_in_pieces(std::string_view name, std::string_view value);
    void append_length(std::size_t length);
    bool make_room(std::size_t size);

    char* buffer_;
    std::size_t capacity_;
    Flush flush_;
    void* context_;
    std::uint16_t request_id_;
    std::size_t size_ = 0;          // bytes written into the buffer
    std::size_t record_ = SIZE_MAX; // where the open record's header is, if any
    RecordType type_ = RecordType::params;
    std::size_t space_ = 0; // what the last stdin_space() gave
    // Content a record whose header went ahead (keep_together) still takes.
    std::size_t owed_ = 0;
    int error_ = 0;
    std::uint32_t flushes_ = 0; // buffers handed to flush_
};

class RecordReader {
public:
    enum class Kind : std::uint8_t {
        need_more,   // every byte given was consumed; give more
        stdout_data, // `data`: bytes of the response (a CGI head, then the body)
        stderr_data, // `data`: bytes the application wrote to its error stream
        end_request, // `app_status`, `protocol_status`: the request is over
        error,       // `error`: what was wrong; the connection is unusable
    };
    struct Item {
        Kind kind = Kind::need_more;
        std::string_view data;
        std::uint32_t app_status = 0;
        ProtocolStatus protocol_status = ProtocolStatus::request_complete;
        const char* error = nullptr;
    };

    explicit RecordReader(std::uint16_t request_id = kRequestId) : request_id_(request_id) {}

    // The next item from `input` (the bytes not yet consumed), and how many
    // of them it took in `consumed` (a record's padding with its content,
    // when it is there too). `data` points into `input` and is never
    // empty: an empty STDOUT record (the end of the stream) yields nothing,
    // so empty data never stands for the end. end_request comes once the
    // whole record is in, its padding too. Call again with the rest until
    // need_more; after end_request, any further byte is an error; after an
    // error, every call is.
    Item next(std::string_view input, std::size_t& consumed);

    // Whether END_REQUEST came and nothing is half-read.
    bool ended() const { return state_ == State::ended; }
    // Ready for the next request on the same connection.
    void reset();

private:
    enum class State : std::uint8_t {
        header,
        content,
        padding,
        end_body,
        end_padding,
        ended,
        failed
    };

    const char* start_record(const char* header);
    // The record's content in `data`, as an item of its type.
    Item content_item(std::string_view data) const;
    // Takes END_REQUEST's 8-byte body.
    void end_body(const char* body);
    Item ended_item() const;
    Item fail(const char* why);

    std::uint16_t request_id_;
    State state_ = State::header;
    RecordType type_ = RecordType::stdout_;
    std::uint8_t have_ = 0;   // bytes of the header (or END_REQUEST body) gathered
    char partial_[8];         // those bytes (when they came in pieces)
    std::size_t content_ = 0; // content bytes left in this record
    std::size_t padding_ = 0; // padding bytes left
    std::uint32_t app_status_ = 0;
    ProtocolStatus protocol_status_ = ProtocolStatus::request_complete;
    const char* error_ = nullptr;
};

} // namespace weft::fastcgi
