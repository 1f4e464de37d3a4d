#include "coro/context.hpp"

extern "C" {

// asm/context_*.S: calls entry(value, arg) from a fresh context.
void weft_context_trampoline();

void weft_context_make(weft::Context* context, void* stack_top, weft_context_entry entry,
                       void* arg) noexcept {
    const auto top = reinterpret_cast<std::uintptr_t>(stack_top) & ~std::uintptr_t{15};
    auto* const slots = reinterpret_cast<void**>(top - 16);
    slots[0] = reinterpret_cast<void*>(entry);
    slots[1] = nullptr;
    context->sp = slots;
    context->pc = reinterpret_cast<void*>(&weft_context_trampoline);
    context->fp = arg;
#if defined(__x86_64__)
    asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(context->mxcsr), "=m"(context->x87_control));
#else
    std::uint64_t fpcr = 0;
    asm volatile("mrs %0, fpcr" : "=r"(fpcr));
    context->fpcr = fpcr;
#endif
}

std::int64_t weft_context_switch(weft::Context* save, const weft::Context* to,
                                 std::int64_t value) noexcept {
    return weft::context_switch(*save, *to, value);
}
}
