/* Test helpers that put known values in every callee-saved register around a
 * call of weft_context_switch (see tests/unit/test_context.cpp). */

    .text

/* Saves x19-x30 and d8-d15 in a 176-byte frame; x3 kept at sp + 160. */
.macro save_callee_saved
    stp     x29, x30, [sp, #-176]!
    stp     x19, x20, [sp, #16]
    stp     x21, x22, [sp, #32]
    stp     x23, x24, [sp, #48]
    stp     x25, x26, [sp, #64]
    stp     x27, x28, [sp, #80]
    stp     d8,  d9,  [sp, #96]
    stp     d10, d11, [sp, #112]
    stp     d12, d13, [sp, #128]
    stp     d14, d15, [sp, #144]
    str     x3, [sp, #160]
.endm

.macro restore_callee_saved
    ldp     x19, x20, [sp, #16]
    ldp     x21, x22, [sp, #32]
    ldp     x23, x24, [sp, #48]
    ldp     x25, x26, [sp, #64]
    ldp     x27, x28, [sp, #80]
    ldp     d8,  d9,  [sp, #96]
    ldp     d10, d11, [sp, #112]
    ldp     d12, d13, [sp, #128]
    ldp     d14, d15, [sp, #144]
    ldp     x29, x30, [sp], #176
.endm

/* Fills x19-x29 then d8-d15 with base * (i + 1), i counting from 0. */
.macro fill_callee_saved base
    ldr     x9, =\base
    mov     x10, x9
    mov     x19, x10
    add     x10, x10, x9
    mov     x20, x10
    add     x10, x10, x9
    mov     x21, x10
    add     x10, x10, x9
    mov     x22, x10
    add     x10, x10, x9
    mov     x23, x10
    add     x10, x10, x9
    mov     x24, x10
    add     x10, x10, x9
    mov     x25, x10
    add     x10, x10, x9
    mov     x26, x10
    add     x10, x10, x9
    mov     x27, x10
    add     x10, x10, x9
    mov     x28, x10
    add     x10, x10, x9
    mov     x29, x10
    add     x10, x10, x9
    fmov    d8, x10
    add     x10, x10, x9
    fmov    d9, x10
    add     x10, x10, x9
    fmov    d10, x10
    add     x10, x10, x9
    fmov    d11, x10
    add     x10, x10, x9
    fmov    d12, x10
    add     x10, x10, x9
    fmov    d13, x10
    add     x10, x10, x9
    fmov    d14, x10
    add     x10, x10, x9
    fmov    d15, x10
.endm

/* int64_t weft_test_switch_checked(Context *save, const Context *to, int64_t value, uint64_t seen[19])
 * Loads 0x0101..01 * (i + 1) into x19-x29 and d8-d15, switches, and stores
 * what those registers hold when the switch returns into seen[]. */
    .globl  weft_test_switch_checked
    .type   weft_test_switch_checked, %function
weft_test_switch_checked:
    save_callee_saved
    fill_callee_saved 0x0101010101010101
    bl      weft_context_switch
    ldr     x3, [sp, #160]
    stp     x19, x20, [x3, #0]
    stp     x21, x22, [x3, #16]
    stp     x23, x24, [x3, #32]
    stp     x25, x26, [x3, #48]
    stp     x27, x28, [x3, #64]
    str     x29, [x3, #80]
    stp     d8,  d9,  [x3, #88]
    stp     d10, d11, [x3, #104]
    stp     d12, d13, [x3, #120]
    stp     d14, d15, [x3, #136]
    restore_callee_saved
    ret
    .size   weft_test_switch_checked, .-weft_test_switch_checked

/* int64_t weft_test_switch_scrambled(Context *save, const Context *to, int64_t value)
 * Switches with garbage in every callee-saved register. */
    .globl  weft_test_switch_scrambled
    .type   weft_test_switch_scrambled, %function
weft_test_switch_scrambled:
    save_callee_saved
    fill_callee_saved 0x0000dead0000beef
    bl      weft_context_switch
    restore_callee_saved
    ret
    .size   weft_test_switch_scrambled, .-weft_test_switch_scrambled

    .ltorg
    .section .note.GNU-stack,"",%progbits
