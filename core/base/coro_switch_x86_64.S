/* coro_switch_x86_64.S -- coroutine context switch, x86_64 System V.
 *
 *   void ab__coro_switch(void **save_sp, void *load_sp);    rdi, rsi
 *
 * Pushes what the ABI says a callee must preserve -- rbp, rbx, r12-r15 and
 * the control bits of MXCSR and the x87 control word -- stores rsp in
 * *save_sp, switches to load_sp and pops the same frame from there; the ret
 * returns into the other context.  The MXCSR / x87 word pair is loaded only
 * when it differs from the current one (ldmxcsr and fldcw are slow; the
 * pair's 8-byte slot has zero padding so one compare decides).  Caller-saved registers (rax, rcx, rdx,
 * rsi, rdi, r8-r11, xmm0-15, the flags) need no saving: for the compiler
 * this is an ordinary call.  Both stacks hold the same 64-byte frame (return
 * address included), so the CFI below is valid on either side.
 *
 * ab__coro_trampoline is the return address of a new coroutine's first
 * frame (core/coro.c builds it): r12 = the coroutine, r13 = coro_main.  It
 * marks the end of the call chain for unwinders and never returns.
 */
#if defined(__x86_64__)
        .text

        .globl  ab__coro_switch
        .hidden ab__coro_switch
        .type   ab__coro_switch, @function
        .p2align 4
ab__coro_switch:
        .cfi_startproc
        pushq   %rbp
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbp, 0
        pushq   %rbx
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %rbx, 0
        pushq   %r12
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r12, 0
        pushq   %r13
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r13, 0
        pushq   %r14
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r14, 0
        pushq   %r15
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset %r15, 0
        pushq   $0
        .cfi_adjust_cfa_offset 8
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
        movq    (%rsp), %rax

        movq    %rsp, (%rdi)
        movq    %rsi, %rsp

        cmpq    (%rsp), %rax
        je      1f
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
1:
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %r15
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r15
        popq    %r14
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r14
        popq    %r13
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r13
        popq    %r12
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r12
        popq    %rbx
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rbx
        popq    %rbp
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rbp
        ret
        .cfi_endproc
        .size   ab__coro_switch, .-ab__coro_switch

        .globl  ab__coro_trampoline
        .hidden ab__coro_trampoline
        .type   ab__coro_trampoline, @function
        .p2align 4
ab__coro_trampoline:
        .cfi_startproc
        .cfi_undefined %rip
        movq    %r12, %rdi
        callq   *%r13
        ud2
        .cfi_endproc
        .size   ab__coro_trampoline, .-ab__coro_trampoline
#endif

        .section .note.GNU-stack,"",@progbits
