/* Test helpers that put known values in every callee-saved register around a
 * call of weft_context_switch (see tests/unit/test_context.cpp). */

    .text

/* int64_t weft_test_switch_checked(Context *save, const Context *to, int64_t value, uint64_t seen[6])
 * Loads 0x0101..01 * (i + 1) into rbx rbp r12 r13 r14 r15, switches, and
 * stores what those registers hold when the switch returns into seen[]. */
    .globl  weft_test_switch_checked
    .type   weft_test_switch_checked, @function
weft_test_switch_checked:
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    pushq   %rcx
    movabsq $0x0101010101010101, %rbx
    movabsq $0x0202020202020202, %rbp
    movabsq $0x0303030303030303, %r12
    movabsq $0x0404040404040404, %r13
    movabsq $0x0505050505050505, %r14
    movabsq $0x0606060606060606, %r15
    callq   weft_context_switch@PLT
    movq    (%rsp), %rcx
    movq    %rbx, 0(%rcx)
    movq    %rbp, 8(%rcx)
    movq    %r12, 16(%rcx)
    movq    %r13, 24(%rcx)
    movq    %r14, 32(%rcx)
    movq    %r15, 40(%rcx)
    popq    %rcx
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .size   weft_test_switch_checked, .-weft_test_switch_checked

/* int64_t weft_test_switch_scrambled(Context *save, const Context *to, int64_t value)
 * Switches with garbage in every callee-saved register. */
    .globl  weft_test_switch_scrambled
    .type   weft_test_switch_scrambled, @function
weft_test_switch_scrambled:
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    subq    $8, %rsp
    movabsq $0xdeadbeef00000001, %rbx
    movabsq $0xdeadbeef00000002, %rbp
    movabsq $0xdeadbeef00000003, %r12
    movabsq $0xdeadbeef00000004, %r13
    movabsq $0xdeadbeef00000005, %r14
    movabsq $0xdeadbeef00000006, %r15
    callq   weft_context_switch@PLT
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .size   weft_test_switch_scrambled, .-weft_test_switch_scrambled

    .section .note.GNU-stack,"",%progbits
