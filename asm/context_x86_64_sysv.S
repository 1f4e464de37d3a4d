/*
 * Context switch for x86-64, System V ABI.
 *
 * A saved context is the stack pointer of a suspended stack whose top holds,
 * from low to high addresses:
 *
 *     sp + 0    MXCSR (4 bytes)
 *     sp + 4    x87 control word (2 bytes, 2 unused)
 *     sp + 8    r15
 *     sp + 16   r14
 *     sp + 24   r13
 *     sp + 32   r12
 *     sp + 40   rbx
 *     sp + 48   rbp
 *     sp + 56   return address
 *
 * Only the state the ABI calls callee-saved is kept: every other register is
 * already dead across a call to weft_context_switch.
 *
 * The switch leaves by an indirect jmp, not ret: a ret to another context's
 * address is mispredicted by the return stack buffer every time, which on the
 * machine this was measured on doubled the cost of a round trip (22 ns against
 * 10 ns, bench/coro_switch).
 */

    .text

/* int64_t weft_context_switch(void **save_sp, void *to_sp, int64_t value)
 *
 * Saves the running context into *save_sp, resumes to_sp, and makes `value`
 * the return value of the weft_context_switch call that suspended to_sp (or
 * the first argument of the entry function of a fresh context). */
    .globl  weft_context_switch
    .type   weft_context_switch, @function
    .p2align 4
weft_context_switch:
    .cfi_startproc
    pushq   %rbp
    .cfi_adjust_cfa_offset 8
    pushq   %rbx
    .cfi_adjust_cfa_offset 8
    pushq   %r12
    .cfi_adjust_cfa_offset 8
    pushq   %r13
    .cfi_adjust_cfa_offset 8
    pushq   %r14
    .cfi_adjust_cfa_offset 8
    pushq   %r15
    .cfi_adjust_cfa_offset 8
    subq    $8, %rsp
    .cfi_adjust_cfa_offset 8
    stmxcsr (%rsp)
    fnstcw  4(%rsp)

    movq    %rsp, (%rdi)
    movq    %rsi, %rsp

    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    popq    %r8
    movq    %rdx, %rax
    movq    %rdx, %rdi
    jmpq    *%r8
    .cfi_endproc
    .size   weft_context_switch, .-weft_context_switch

/* First code of a fresh context, reached by the jump of weft_context_switch.
 * r12 holds the entry function, r13 its argument, rdi the value passed by
 * the switch. The entry function never returns. */
    .type   weft_context_trampoline, @function
    .p2align 4
weft_context_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    xorl    %ebp, %ebp
    movq    %r13, %rsi
    callq   *%r12
    ud2
    .cfi_endproc
    .size   weft_context_trampoline, .-weft_context_trampoline

/* void *weft_context_make(void *stack_top, weft_context_entry entry, void *arg)
 *
 * Builds a suspended context at the top of a fresh stack (stack_top is
 * rounded down to 16 bytes) and returns its stack pointer. The context
 * inherits the caller's MXCSR and x87 control word. */
    .globl  weft_context_make
    .type   weft_context_make, @function
    .p2align 4
weft_context_make:
    .cfi_startproc
    movq    %rdi, %rax
    andq    $-16, %rax
    leaq    weft_context_trampoline(%rip), %rcx
    movq    %rcx, -8(%rax)      /* return address: the trampoline */
    movq    $0, -16(%rax)       /* rbp */
    movq    $0, -24(%rax)       /* rbx */
    movq    %rsi, -32(%rax)     /* r12: entry */
    movq    %rdx, -40(%rax)     /* r13: arg */
    movq    $0, -48(%rax)       /* r14 */
    movq    $0, -56(%rax)       /* r15 */
    subq    $64, %rax
    stmxcsr (%rax)
    fnstcw  4(%rax)
    ret
    .cfi_endproc
    .size   weft_context_make, .-weft_context_make

    .section .note.GNU-stack,"",%progbits
