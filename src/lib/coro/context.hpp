#pragma once
// The hand-written context switch (asm/context_*.S).
//
// A context is the stack pointer of a suspended stack; the callee-saved
// registers and FP control state sit on that stack. Switching saves the
// running context and resumes another, passing one 64-bit value across.

#include <cstdint>

extern "C" {

// The first code of a fresh context: `value` is what the first switch into it
// passed, `arg` what weft_context_make was given. It must never return.
using weft_context_entry = void (*)(std::int64_t value, void* arg);

// Builds a suspended context at the top of a fresh stack (rounded down to 16
// bytes; up to 176 bytes below it are used) and returns its stack pointer.
void* weft_context_make(void* stack_top, weft_context_entry entry, void* arg) noexcept;

// Saves the running context into *save_sp and resumes to_sp. The resumed side
// sees `value` as the return value of its own weft_context_switch call.
std::int64_t weft_context_switch(void** save_sp, void* to_sp, std::int64_t value) noexcept;
}
