/* Cortex-M start-up: vector table, reset handler, fault handler, semihosting trap.
 *
 * Written with ARMv6-M instructions only (a subset of v7-M/v8-M Thumb), so one file serves every
 * core from M0 to M55. Preprocessed (.S): the FPU enable depends on the -mcpu/-mfpu it is built with.
 * Symbols from the linker script (sections.ld): __stack_top, __stack_bottom, __data_start,
 * __data_end, __data_load, __bss_start, __bss_end.
 */
    .syntax unified
    .thumb

    .section .vectors, "a", %progbits
    .align 2
    .global __vectors
__vectors:
    .word __stack_top           /* 0: initial MSP */
    .word Reset_Handler         /* 1: reset */
    .word Fault_Handler         /* 2: NMI */
    .word Fault_Handler         /* 3: HardFault */
    .word Fault_Handler         /* 4: MemManage */
    .word Fault_Handler         /* 5: BusFault */
    .word Fault_Handler         /* 6: UsageFault */
    .word Fault_Handler         /* 7: SecureFault (ARMv8-M) */
    .word 0, 0, 0               /* 8-10: reserved */
    .word Fault_Handler         /* 11: SVCall */
    .word Fault_Handler         /* 12: DebugMonitor */
    .word 0                     /* 13: reserved */
    .word Fault_Handler         /* 14: PendSV */
    .word SysTick_Handler       /* 15: SysTick: counts counter wraps (firmware.c, fw_count_*) */
    /* No external interrupts: the firmware never enables one. */

    .text

    .global Reset_Handler
    .type Reset_Handler, %function
    .thumb_func
Reset_Handler:
#if (defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)) && !defined(LEAVE_FPU_OFF)
    /* The FPU (and on the M55 Helium/MVE, which shares its enable) is off at reset: any
       floating-point or vector instruction before this would fault with NOCP. CPACR.CP10/CP11 =
       full access, then barriers so that the next instruction sees it. (LEAVE_FPU_OFF: for the test
       that checks a hard-float bundle really faults without it.) */
    ldr r0, =0xE000ED88
    ldr r1, [r0]
    ldr r2, =(0xF << 20)
    orrs r1, r2
    str r1, [r0]
    dsb
    isb
#endif
#if defined(TRAP_UNALIGNED)
    /* CCR.UNALIGN_TRP: fault on unaligned word/halfword accesses, as an ARMv6-M core (M0) always
       does. QEMU's stand-in for the M0 is an M3, which would otherwise allow them silently. */
    ldr r0, =0xE000ED14
    ldr r1, [r0]
    movs r2, #8
    orrs r1, r2
    str r1, [r0]
    dsb
    isb
#endif
    /* .data: copy its initial values from flash (load address) to RAM. */
    ldr r0, =__data_start
    ldr r1, =__data_end
    ldr r2, =__data_load
1:  cmp r0, r1
    bhs 2f
    ldr r3, [r2]
    str r3, [r0]
    adds r0, #4
    adds r2, #4
    b 1b
    /* .bss: zero. */
2:  ldr r0, =__bss_start
    ldr r1, =__bss_end
    movs r3, #0
3:  cmp r0, r1
    bhs 4f
    str r3, [r0]
    adds r0, #4
    b 3b
    /* Paint the stack below the current SP, so that fw_stack_used can measure the peak use. */
4:  ldr r0, =__stack_bottom
    mov r1, sp
    ldr r3, =0x5AC3A55C
5:  cmp r0, r1
    bhs 6f
    str r3, [r0]
    adds r0, #4
    b 5b
6:  bl main
    bl fw_exit                  /* r0: main's return value */
    .size Reset_Handler, . - Reset_Handler
    .pool

    /* Every exception is fatal: report where it happened and exit with status 3. */
    .global Fault_Handler
    .type Fault_Handler, %function
    .thumb_func
Fault_Handler:
    mrs r0, msp                 /* the firmware runs on MSP only: the frame is there */
    mrs r1, ipsr
    mov r2, lr                  /* EXC_RETURN */
    bl fw_arm_fault
    .size Fault_Handler, . - Fault_Handler

    /* uintptr_t sh_trap(uintptr_t op, uintptr_t arg): r0 = operation, r1 = argument/block. */
    .global sh_trap
    .type sh_trap, %function
    .thumb_func
sh_trap:
    bkpt 0xab
    bx lr
    .size sh_trap, . - sh_trap
