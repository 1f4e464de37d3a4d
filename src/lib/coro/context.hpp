#pragma once
// The context switch: inline assembly here, the first code of a fresh
// context in asm/context_*.S.
//
// A suspended context is a small record: where its stack is, where it
// continues, its frame pointer and its FP control state. The switch is
// inline assembly that tells the compiler every other register is
// clobbered, so the compiler keeps across it only the values live there,
// and saves the callee-saved registers it uses once, in the prologue of the
// function that switches, instead of the switch pushing and popping all of
// them every time: a round trip costs about half the instructions of a
// switch function that saves everything (docs/architecture.md, "Measured").

#include <cstddef>
#include <cstdint>

namespace weft {

struct Context {
    void* sp = nullptr; // its stack pointer
    void* pc = nullptr; // where it continues
    void* fp = nullptr; // its frame pointer; a fresh context's argument
#if defined(__x86_64__)
    // Callee-saved per the ABI: the control bits of MXCSR, the x87 control
    // word. A coroutine that changes its rounding mode keeps it to itself.
    std::uint32_t mxcsr = 0;
    std::uint16_t x87_control = 0;
#elif defined(__aarch64__)
    std::uint64_t fpcr = 0; // callee-saved per AAPCS64
#else
#error "weft has context switches for x86-64 and aarch64 only"
#endif
};

// The assembly below and in asm/ reads the record at these offsets.
static_assert(offsetof(Context, sp) == 0 && offsetof(Context, pc) == 8 &&
              offsetof(Context, fp) == 16);
#if defined(__x86_64__)
static_assert(offsetof(Context, mxcsr) == 24 && offsetof(Context, x87_control) == 28);
#else
static_assert(offsetof(Context, fpcr) == 24);
#endif

} // namespace weft

extern "C" {

// The first code of a fresh context: `value` is what the first switch into it
// passed, `arg` what weft_context_make was given. It must never return.
using weft_context_entry = void (*)(std::int64_t value, void* arg);

// Makes *context a fresh context on the stack below stack_top (rounded down
// to 16 bytes; 16 bytes below it are used): the first switch into it calls
// entry(value, arg). It inherits the caller's FP control state.
void weft_context_make(weft::Context* context, void* stack_top, weft_context_entry entry,
                       void* arg) noexcept;

// weft::context_switch as a function, for callers in assembly (the tests
// that check every callee-saved register survives a switch).
std::int64_t weft_context_switch(weft::Context* save, const weft::Context* to,
                                 std::int64_t value) noexcept;
}

namespace weft {

// Saves the running context into `save` and resumes `to`. The resumed side
// sees `value` as the return value of its own context_switch (or as the
// first argument of its entry function, if it is fresh).
//
// The switch leaves by an indirect jump, never `ret`: a `ret` to another
// stack's address is mispredicted by the return stack buffer every time. It
// touches neither stack, so whatever the compiler keeps in the red zone below
// the stack pointer stays intact. The frame pointer is saved by hand: a
// compiler keeping a frame (debug and sanitizer builds) refuses it as a
// clobber.
[[gnu::always_inline]] inline std::int64_t context_switch(Context& save, const Context& to,
                                                          std::int64_t value) noexcept {
#if defined(__x86_64__)
    Context* from = &save;
    const Context* into = &to;
    asm volatile("leaq 1f(%%rip), %%rax\n\t"
                 "movq %%rsp, 0(%[from])\n\t"
                 "movq %%rax, 8(%[from])\n\t"
                 "movq %%rbp, 16(%[from])\n\t"
                 "stmxcsr 24(%[from])\n\t"
                 "fnstcw 28(%[from])\n\t"
                 "ldmxcsr 24(%[into])\n\t"
                 "fldcw 28(%[into])\n\t"
                 "movq 16(%[into]), %%rbp\n\t"
                 "movq 0(%[into]), %%rsp\n\t"
                 "jmpq *8(%[into])\n"
                 "1:"
                 : "+D"(value), [from] "+S"(from), [into] "+d"(into)
                 :
                 : "rax", "rbx", "rcx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
                   "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                   "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
#if defined(__AVX512F__)
                   "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",
                   "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3",
                   "k4", "k5", "k6", "k7",
#endif
                   "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", "st(7)", "cc",
                   "memory");
    return value;
#else
    // FPCR is written only when it differs: writing it can stall, and
    // reading it goes to a register, so the test costs nothing.
    register std::int64_t x0 asm("x0") = value;
    register Context* x1 asm("x1") = &save;
    register const Context* x2 asm("x2") = &to;
    asm volatile("adr x9, 1f\n\t"
                 "mov x10, sp\n\t"
                 "stp x10, x9, [x1, #0]\n\t"
                 "mrs x11, fpcr\n\t"
                 "stp x29, x11, [x1, #16]\n\t"
                 "ldp x29, x12, [x2, #16]\n\t"
                 "cmp x12, x11\n\t"
                 "b.eq 2f\n\t"
                 "msr fpcr, x12\n"
                 "2:\n\t"
                 "ldp x10, x9, [x2, #0]\n\t"
                 "mov sp, x10\n\t"
                 "br x9\n"
                 "1:"
                 : "+r"(x0), "+r"(x1), "+r"(x2)
                 :
                 : "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
                   "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25",
                   "x26", "x27", "x28", "x30", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8",
                   "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19",
                   "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30",
                   "v31", "cc", "memory");
    return x0;
#endif
}

} // namespace weft
