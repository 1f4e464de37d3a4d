#pragma once
// Sixteen bytes at a time: the head parsers' scans (the request's, PHP's CGI
// head) classify 16 bytes
// at once, each byte of a Block becoming 0xff or 0x00, and bits() gathers
// that into a mask, bit i for byte i, whose lowest set bit is the first byte
// picked. SSE2 (every x86-64) does each step in an instruction or two;
// elsewhere the same steps are loops that give the same masks, only slower.
//
// Everything here is inlined into the scan that uses it (always_inline: the
// scans are the parser's hot loops, with their constants in registers).

#include <array>
#include <bit>
#include <cstddef>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace weft::byte_scan {

#if defined(__SSE2__)
struct Block {
    __m128i v;
};
[[gnu::always_inline]] inline Block load_block(const char* p) {
    return {_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))};
}
[[gnu::always_inline]] inline Block operator|(Block a, Block b) {
    return {_mm_or_si128(a.v, b.v)};
}
[[gnu::always_inline]] inline Block lower(Block b) {
    return {_mm_or_si128(b.v, _mm_set1_epi8(0x20))};
}
[[gnu::always_inline]] inline Block equal(Block b, char c) {
    return {_mm_cmpeq_epi8(b.v, _mm_set1_epi8(c))};
}
// Bytes in [lo, hi], unsigned: subtracting lo wraps the bytes below it above
// hi - lo, so one unsigned minimum tells both sides.
[[gnu::always_inline]] inline Block within(Block b, unsigned char lo, unsigned char hi) {
    const __m128i shifted = _mm_sub_epi8(b.v, _mm_set1_epi8(static_cast<char>(lo)));
    const __m128i clamped = _mm_min_epu8(shifted, _mm_set1_epi8(static_cast<char>(hi - lo)));
    return {_mm_cmpeq_epi8(clamped, shifted)};
}
[[gnu::always_inline]] inline unsigned bits(Block b) {
    return static_cast<unsigned>(_mm_movemask_epi8(b.v));
}
#else
struct Block {
    std::array<unsigned char, 16> b;
};
[[gnu::always_inline]] inline Block load_block(const char* p) {
    Block block;
    std::memcpy(block.b.data(), p, 16);
    return block;
}
template <class Test>
[[gnu::always_inline]] inline Block each(Block b, Test test) {
    for (unsigned char& c : b.b) c = test(c) ? 0xff : 0x00;
    return b;
}
[[gnu::always_inline]] inline Block operator|(Block a, Block b) {
    for (unsigned i = 0; i < 16; ++i) a.b[i] |= b.b[i];
    return a;
}
[[gnu::always_inline]] inline Block lower(Block b) {
    for (unsigned char& c : b.b) c |= 0x20;
    return b;
}
[[gnu::always_inline]] inline Block equal(Block b, char c) {
    return each(b, [c](unsigned char x) { return x == static_cast<unsigned char>(c); });
}
[[gnu::always_inline]] inline Block within(Block b, unsigned char lo, unsigned char hi) {
    return each(b, [lo, hi](unsigned char x) { return x >= lo && x <= hi; });
}
[[gnu::always_inline]] inline unsigned bits(Block b) {
    unsigned mask = 0;
    for (unsigned i = 0; i < 16; ++i) mask |= static_cast<unsigned>(b.b[i] >> 7) << i;
    return mask;
}
#endif

// Every byte of a Block, as bits().
inline constexpr unsigned kAll = 0xffff;

// OR 0x20 maps the upper-case letters onto the lower-case ones and no other
// byte onto a letter.
[[gnu::always_inline]] inline Block letter(Block b) {
    return within(lower(b), 'a', 'z');
}

// The bytes a field line's scans stop at, in either head: the controls (CR,
// LF, and HTAB, which is plain in a value but rare enough to step over one
// at a time) and DEL.
[[gnu::always_inline]] inline Block control(Block b) {
    return within(b, 0x00, 0x1f) | equal(b, 0x7f);
}
struct ControlBits {
    [[gnu::always_inline]] unsigned operator()(Block b) const { return bits(control(b)); }
};

// Field names are nearly always letters, digits and '-': a scan of one stops
// at its colon, or at a byte that needs the full tchar check.
struct NotNameBits {
    [[gnu::always_inline]] unsigned operator()(Block b) const {
        return ~bits(letter(b) | within(b, '0', '9') | equal(b, '-')) & kAll;
    }
};

// What `pick` picks of the bytes [p, stop), fewer than 16, in an input
// shorter than 16 bytes.
template <class Pick>
[[gnu::noinline]] unsigned pick_short(const char* bytes, std::size_t p, std::size_t stop,
                                      Pick pick) {
    Block block{};
    std::memcpy(&block, bytes + p, stop - p);
    return pick(block) & ((1u << (stop - p)) - 1);
}

// The first byte in [p, stop) that `pick` picks (a function object from a
// Block to a mask), or stop; no byte at or after stop is read.
template <class Pick>
[[gnu::always_inline]] inline std::size_t find(const char* bytes, std::size_t p, std::size_t stop,
                                               Pick pick) {
    for (; stop - p >= 16; p += 16)
        if (const unsigned mask = pick(load_block(bytes + p))) return p + std::countr_zero(mask);
    if (p == stop) return stop;
    // The last 16 bytes before stop, shifted past those before p (which were
    // looked at already, or are not the caller's concern).
    const unsigned mask = stop >= 16 ? pick(load_block(bytes + stop - 16)) >> (16 - (stop - p))
                                     : pick_short(bytes, p, stop, pick);
    return mask != 0 ? p + std::countr_zero(mask) : stop;
}

} // namespace weft::byte_scan
