/*
 * The first code of a fresh context for x86-64, System V ABI. The switch
 * itself is inline assembly in src/lib/coro/context.hpp.
 *
 * weft_context_make leaves a fresh context with its stack pointer 16 bytes
 * below the (16-byte aligned) top of its stack, the entry function stored
 * there, and the entry's argument as its frame pointer. The switch into it
 * jumps here with the value it passes in rdi.
 */

    .text

/* Calls entry(value, arg) on an aligned stack, as the outermost frame (CFI
 * marks the return address undefined: unwinders and debuggers stop here).
 * The entry function never returns. */
    .globl  weft_context_trampoline
    .hidden weft_context_trampoline
    .type   weft_context_trampoline, @function
    .p2align 4
weft_context_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq    (%rsp), %rax
    movq    %rbp, %rsi
    xorl    %ebp, %ebp
    callq   *%rax
    ud2
    .cfi_endproc
    .size   weft_context_trampoline, .-weft_context_trampoline

    .section .note.GNU-stack,"",%progbits
