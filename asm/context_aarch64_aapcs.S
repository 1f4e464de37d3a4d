/*
 * Context switch for aarch64, AAPCS64.
 *
 * A saved context is the stack pointer of a suspended stack whose top holds
 * a 176-byte frame, from low to high addresses:
 *
 *     sp + 0    x19 x20 x21 x22 x23 x24 x25 x26 x27 x28
 *     sp + 80   x29 (frame pointer), x30 (link register: where to resume)
 *     sp + 96   d8 .. d15 (the low halves of v8-v15 are callee-saved)
 *     sp + 160  FPCR (rounding mode and the other FP control bits)
 *     sp + 168  unused, keeps sp 16-byte aligned
 *
 * The switch leaves by `br`, not `ret`: a return to another context's address
 * would be mispredicted by the return address stack every time.
 */

    .text

/* int64_t weft_context_switch(void **save_sp, void *to_sp, int64_t value) */
    .globl  weft_context_switch
    .type   weft_context_switch, %function
    .p2align 4
weft_context_switch:
    .cfi_startproc
    sub     sp, sp, #176
    .cfi_adjust_cfa_offset 176
    stp     x19, x20, [sp, #0]
    stp     x21, x22, [sp, #16]
    stp     x23, x24, [sp, #32]
    stp     x25, x26, [sp, #48]
    stp     x27, x28, [sp, #64]
    stp     x29, x30, [sp, #80]
    stp     d8,  d9,  [sp, #96]
    stp     d10, d11, [sp, #112]
    stp     d12, d13, [sp, #128]
    stp     d14, d15, [sp, #144]
    mrs     x10, fpcr
    str     x10, [sp, #160]

    mov     x9, sp
    str     x9, [x0]
    mov     sp, x1

    ldp     x19, x20, [sp, #0]
    ldp     x21, x22, [sp, #16]
    ldp     x23, x24, [sp, #32]
    ldp     x25, x26, [sp, #48]
    ldp     x27, x28, [sp, #64]
    ldp     x29, x30, [sp, #80]
    ldp     d8,  d9,  [sp, #96]
    ldp     d10, d11, [sp, #112]
    ldp     d12, d13, [sp, #128]
    ldp     d14, d15, [sp, #144]
    ldr     x9, [sp, #160]
    /* Writing FPCR can stall the pipeline: only write when it differs. */
    cmp     x9, x10
    b.eq    1f
    msr     fpcr, x9
1:
    add     sp, sp, #176
    mov     x0, x2
    br      x30
    .cfi_endproc
    .size   weft_context_switch, .-weft_context_switch

/* First code of a fresh context, reached by the jump of weft_context_switch.
 * x19 holds the entry function, x20 its argument, x0 the value passed by the
 * switch. The entry function never returns. */
    .type   weft_context_trampoline, %function
    .p2align 4
weft_context_trampoline:
    .cfi_startproc
    .cfi_undefined x30
    mov     x29, #0
    mov     x1, x20
    blr     x19
    brk     #0
    .cfi_endproc
    .size   weft_context_trampoline, .-weft_context_trampoline

/* void *weft_context_make(void *stack_top, weft_context_entry entry, void *arg) */
    .globl  weft_context_make
    .type   weft_context_make, %function
    .p2align 4
weft_context_make:
    .cfi_startproc
    and     x9, x0, #~15
    sub     x0, x9, #176
    stp     x1,  x2,  [x0, #0]      /* x19: entry, x20: arg */
    stp     xzr, xzr, [x0, #16]
    stp     xzr, xzr, [x0, #32]
    stp     xzr, xzr, [x0, #48]
    stp     xzr, xzr, [x0, #64]
    adr     x10, weft_context_trampoline
    stp     xzr, x10, [x0, #80]     /* x29: 0, x30: the trampoline */
    stp     xzr, xzr, [x0, #96]
    stp     xzr, xzr, [x0, #112]
    stp     xzr, xzr, [x0, #128]
    stp     xzr, xzr, [x0, #144]
    mrs     x10, fpcr
    stp     x10, xzr, [x0, #160]
    ret
    .cfi_endproc
    .size   weft_context_make, .-weft_context_make

    .section .note.GNU-stack,"",%progbits
