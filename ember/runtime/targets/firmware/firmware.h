/* Test firmware services shared by the Cortex-M and RISC-V start-up code.
 *
 * The firmware has no libc: output and exit go through semihosting (the debugger, here QEMU, does
 * the I/O on the host), which is all a test needs to get results off a board.
 */
#ifndef EMBER_TEST_FIRMWARE_H
#define EMBER_TEST_FIRMWARE_H

#include <stddef.h>
#include <stdint.h>

/* Semihosting operation numbers (Arm "Semihosting for AArch32 and AArch64", also used by RISC-V). */
#define SH_SYS_WRITEC 0x03
#define SH_SYS_WRITE0 0x04
#define SH_SYS_EXIT 0x18
#define SH_SYS_EXIT_EXTENDED 0x20
#define SH_ADP_STOPPED_APPLICATION_EXIT 0x20026

/* The trap itself, in the start-up assembly: `bkpt 0xab` on Arm, slli/ebreak/srai on RISC-V. */
uintptr_t sh_trap(uintptr_t op, uintptr_t arg);

void fw_puts(const char *s);                       /* SYS_WRITE0: a NUL-terminated string */
void fw_putc(char c);                              /* SYS_WRITEC: one character */
void fw_put_hex32(uint32_t v);                     /* 8 hex digits */
void fw_put_dec(uint32_t v);
void fw_put_bytes_hex(const uint8_t *p, size_t n); /* 2 hex digits a byte, no separators */
void fw_exit(int status) __attribute__((noreturn));

/* Bytes of the stack that were ever used (the start-up code paints the stack before main). */
uint32_t fw_stack_used(void);

/* Executed instructions between fw_count_start and fw_count_stop, in the units the runner converts
   (ember/runtime/targets/mcu.py): under QEMU's -icount, Cortex-M SysTick ticks of the core clock
   (its wraps counted in SysTick_Handler), RISC-V minstret. Written as hi:lo for 64 bits. */
void fw_count_start(void);
void fw_count_stop(uint32_t *hi, uint32_t *lo);

#endif
