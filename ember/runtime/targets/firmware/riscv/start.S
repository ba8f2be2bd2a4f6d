/* RISC-V (RV32, machine mode) start-up: stack, trap vector, FPU enable, .data/.bss, semihosting trap.
 *
 * QEMU's virt board with -bios none jumps straight to the ELF entry in machine mode. Symbols from
 * virt.ld: __stack_top, __stack_bottom, __data_start, __data_end, __data_load, __bss_start,
 * __bss_end, __global_pointer$.
 */
    .section .text.start, "ax", @progbits
    .global _start
_start:
    .option push
    .option norelax             /* gp must not be computed relative to itself */
    la gp, __global_pointer$
    .option pop
    la sp, __stack_top
    la t0, trap_entry
    csrw mtvec, t0              /* direct mode: trap_entry is 4-byte aligned */
#if defined(__riscv_flen) && !defined(LEAVE_FPU_OFF)
    /* mstatus.FS = Initial: with FS = Off (the reset value) every F instruction is illegal.
       (LEAVE_FPU_OFF: for the test that checks a hard-float bundle really traps without it.) */
    li t0, 0x2000
    csrs mstatus, t0
    fscsr zero
#endif
    /* .data: copy its initial values from their load address. */
    la t0, __data_start
    la t1, __data_end
    la t2, __data_load
1:  bgeu t0, t1, 2f
    lw t3, 0(t2)
    sw t3, 0(t0)
    addi t0, t0, 4
    addi t2, t2, 4
    j 1b
    /* .bss: zero. */
2:  la t0, __bss_start
    la t1, __bss_end
3:  bgeu t0, t1, 4f
    sw zero, 0(t0)
    addi t0, t0, 4
    j 3b
    /* Paint the stack below sp, so that fw_stack_used can measure the peak use. */
4:  la t0, __stack_bottom
    li t3, 0x5AC3A55C
5:  bgeu t0, sp, 6f
    sw t3, 0(t0)
    addi t0, t0, 4
    j 5b
6:  call main
    call fw_exit                /* a0: main's return value */

    /* Every trap is fatal: report it on a fresh stack (the old one may be what failed). */
    .text
    .balign 4
trap_entry:
    la sp, __stack_top
    csrr a0, mcause
    csrr a1, mepc
    csrr a2, mtval
    call fw_riscv_trap

    /* uintptr_t sh_trap(uintptr_t op, uintptr_t arg): a0 = operation, a1 = argument/block.
       The debugger recognises the three-instruction sequence only uncompressed and within one
       page, hence norvc and the alignment. */
    .global sh_trap
    .type sh_trap, @function
    .balign 16
sh_trap:
    .option push
    .option norvc
    .option norelax
    slli x0, x0, 0x1f
    ebreak
    srai x0, x0, 7
    .option pop
    ret
    .size sh_trap, . - sh_trap
