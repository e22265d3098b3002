/* coro_switch_aarch64.S -- coroutine context switch, AArch64 (AAPCS64).
 *
 *   void ab__coro_switch(void **save_sp, void *load_sp);    x0, x1
 *
 * Stores what the ABI says a callee must preserve -- x19-x28, the frame
 * pointer x29, the link register x30 (our return address), d8-d15 (the low
 * halves of v8-v15) and FPCR (rounding mode, flush-to-zero) -- in a 176-byte
 * frame on the current stack, stores sp in *save_sp, switches to load_sp,
 * loads the same frame from there and returns through x30 into the other
 * context.  FPCR is written only when it differs: an msr to it can be slow.
 *
 * ab__coro_trampoline is the first x30 of a new coroutine (core/coro.c
 * builds the frame): x19 = the coroutine, x20 = coro_main.  It marks the end
 * of the call chain for unwinders and never returns.
 */
#if defined(__aarch64__)
        .text

        .globl  ab__coro_switch
        .hidden ab__coro_switch
        .type   ab__coro_switch, %function
        .p2align 4
ab__coro_switch:
        .cfi_startproc
        sub     sp, sp, #176
        .cfi_adjust_cfa_offset 176
        stp     x19, x20, [sp, #0]
        stp     x21, x22, [sp, #16]
        stp     x23, x24, [sp, #32]
        stp     x25, x26, [sp, #48]
        stp     x27, x28, [sp, #64]
        stp     x29, x30, [sp, #80]
        .cfi_rel_offset x29, 80
        .cfi_rel_offset x30, 88
        stp     d8, d9, [sp, #96]
        stp     d10, d11, [sp, #112]
        stp     d12, d13, [sp, #128]
        stp     d14, d15, [sp, #144]
        mrs     x9, fpcr
        str     x9, [sp, #160]

        mov     x10, sp
        str     x10, [x0]
        mov     sp, x1

        ldr     x10, [sp, #160]
        cmp     x9, x10
        b.eq    1f
        msr     fpcr, x10
1:
        ldp     x19, x20, [sp, #0]
        ldp     x21, x22, [sp, #16]
        ldp     x23, x24, [sp, #32]
        ldp     x25, x26, [sp, #48]
        ldp     x27, x28, [sp, #64]
        ldp     x29, x30, [sp, #80]
        ldp     d8, d9, [sp, #96]
        ldp     d10, d11, [sp, #112]
        ldp     d12, d13, [sp, #128]
        ldp     d14, d15, [sp, #144]
        add     sp, sp, #176
        .cfi_adjust_cfa_offset -176
        .cfi_restore x29
        .cfi_restore x30
        ret
        .cfi_endproc
        .size   ab__coro_switch, .-ab__coro_switch

        .globl  ab__coro_trampoline
        .hidden ab__coro_trampoline
        .type   ab__coro_trampoline, %function
        .p2align 4
ab__coro_trampoline:
        .cfi_startproc
        .cfi_undefined x30
        mov     x0, x19
        blr     x20
        brk     #0
        .cfi_endproc
        .size   ab__coro_trampoline, .-ab__coro_trampoline
#endif

        .section .note.GNU-stack,"",%progbits
