/*
 * The first code of a fresh context for aarch64, AAPCS64. The switch itself
 * is inline assembly in src/lib/coro/context.hpp.
 *
 * weft_context_make leaves a fresh context with its stack pointer 16 bytes
 * below the (16-byte aligned) top of its stack, the entry function stored
 * there, and the entry's argument as its frame pointer (x29). The switch
 * into it branches here with the value it passes in x0.
 */

    .text

/* Calls entry(value, arg) as the outermost frame (CFI marks the return
 * address undefined, and the frame pointer is zeroed: unwinders and
 * debuggers stop here). The entry function never returns. */
    .globl  weft_context_trampoline
    .hidden weft_context_trampoline
    .type   weft_context_trampoline, %function
    .p2align 4
weft_context_trampoline:
    .cfi_startproc
    .cfi_undefined x30
    ldr     x9, [sp]
    mov     x1, x29
    mov     x29, #0
    blr     x9
    brk     #0
    .cfi_endproc
    .size   weft_context_trampoline, .-weft_context_trampoline

    .section .note.GNU-stack,"",%progbits
