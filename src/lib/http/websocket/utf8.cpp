#include "http/websocket/utf8.hpp"

#include <array>
#include <cstring>

namespace weft::http::websocket {

namespace {

// Bytes by what they may be in well-formed UTF-8 (Table 3-7): the second
// byte's range depends on the first for E0, ED, F0 and F4, so the
// continuation bytes come in three ranges.
enum Class : std::uint8_t {
    ascii,      // 00-7F
    cont_80_8f, // 80-8F
    cont_90_9f, // 90-9F
    cont_a0_bf, // A0-BF
    lead2,      // C2-DF
    lead_e0,    // E0: A0-BF next (below is overlong)
    lead3,      // E1-EC, EE-EF
    lead_ed,    // ED: 80-9F next (above is a surrogate)
    lead_f0,    // F0: 90-BF next (below is overlong)
    lead4,      // F1-F3
    lead_f4,    // F4: 80-8F next (above is past U+10FFFF)
    never,      // C0, C1 (overlong), F5-FF (past U+10FFFF)
    class_count,
};

constexpr std::array<std::uint8_t, 256> make_classes() {
    std::array<std::uint8_t, 256> classes{};
    for (unsigned byte = 0; byte < 256; ++byte) {
        Class c = never;
        if (byte <= 0x7F)
            c = ascii;
        else if (byte <= 0x8F)
            c = cont_80_8f;
        else if (byte <= 0x9F)
            c = cont_90_9f;
        else if (byte <= 0xBF)
            c = cont_a0_bf;
        else if (byte >= 0xC2 && byte <= 0xDF)
            c = lead2;
        else if (byte == 0xE0)
            c = lead_e0;
        else if (byte == 0xED)
            c = lead_ed;
        else if (byte >= 0xE1 && byte <= 0xEF)
            c = lead3;
        else if (byte == 0xF0)
            c = lead_f0;
        else if (byte >= 0xF1 && byte <= 0xF3)
            c = lead4;
        else if (byte == 0xF4)
            c = lead_f4;
        classes[byte] = c;
    }
    return classes;
}

// Between characters and rejected are Utf8Validator's kAccept and kReject.
enum State : std::uint8_t {
    accept = Utf8Validator::kAccept,
    reject = Utf8Validator::kReject,
    need1,    // one continuation byte, any
    need2,    // two, any
    need3,    // three, any
    after_e0, // A0-BF, then one
    after_ed, // 80-9F, then one
    after_f0, // 90-BF, then two
    after_f4, // 80-8F, then two
    state_count,
};

using Transitions = std::array<std::array<std::uint8_t, class_count>, state_count>;

constexpr Transitions make_transitions() {
    Transitions next{};
    for (auto& row : next) row.fill(reject);
    next[accept][ascii] = accept;
    next[accept][lead2] = need1;
    next[accept][lead_e0] = after_e0;
    next[accept][lead3] = need2;
    next[accept][lead_ed] = after_ed;
    next[accept][lead_f0] = after_f0;
    next[accept][lead4] = need3;
    next[accept][lead_f4] = after_f4;
    for (std::uint8_t c : {cont_80_8f, cont_90_9f, cont_a0_bf}) {
        next[need1][c] = accept;
        next[need2][c] = need1;
        next[need3][c] = need2;
    }
    next[after_e0][cont_a0_bf] = need1;
    next[after_ed][cont_80_8f] = need1;
    next[after_ed][cont_90_9f] = need1;
    next[after_f0][cont_90_9f] = need2;
    next[after_f0][cont_a0_bf] = need2;
    next[after_f4][cont_80_8f] = need2;
    return next;
}

constexpr std::array<std::uint8_t, 256> kClasses = make_classes();
constexpr Transitions kNext = make_transitions();

static_assert(kClasses[0xC1] == never && kClasses[0xC2] == lead2 && kClasses[0xF5] == never);
static_assert(kNext[reject][ascii] == reject, "rejection is for good");

} // namespace

bool Utf8Validator::feed(std::span<const std::uint8_t> bytes) {
    const std::uint8_t* p = bytes.data();
    const std::uint8_t* const end = p + bytes.size();
    std::uint8_t state = state_;
    while (p != end) {
        // Between characters, ASCII goes eight bytes at a time: most text is
        // mostly ASCII.
        if (state == accept) {
            while (end - p >= 8) {
                std::uint64_t word;
                std::memcpy(&word, p, sizeof word);
                if (word & 0x8080808080808080u) break;
                p += 8;
            }
            if (p == end) break;
        }
        state = kNext[state][kClasses[*p++]];
        if (state == reject) break;
    }
    state_ = state;
    return state != reject;
}

bool is_valid_utf8(std::span<const std::uint8_t> bytes) {
    Utf8Validator validator;
    return validator.feed(bytes) && validator.complete();
}

} // namespace weft::http::websocket
