/* Cortex-M start-up in C: the vector table, a reset handler that prepares memory and the FPU and calls
 * main, and semihosting output/exit (the debugger, here QEMU, prints for the board). */
#include <stdint.h>

#include "semihost.h"

extern uint32_t __data_start[], __data_end[], __data_load[], __bss_start[], __bss_end[], __stack_top[];
int main(void);
void Reset_Handler(void);
void Fault_Handler(void);

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))__stack_top, Reset_Handler, Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, 0, 0, 0, 0, Fault_Handler, Fault_Handler, 0, Fault_Handler, Fault_Handler,
};

static uintptr_t semihost(uintptr_t op, uintptr_t arg) {
    register uintptr_t r0 __asm__("r0") = op;
    register uintptr_t r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void sh_puts(const char *s) { semihost(0x04, (uintptr_t)s); } /* SYS_WRITE0 */

__attribute__((noreturn)) void sh_exit(int status) {
    uintptr_t block[2] = {0x20026, (uintptr_t)status}; /* ADP_Stopped_ApplicationExit, status */
    semihost(0x20, (uintptr_t)block);                  /* SYS_EXIT_EXTENDED: QEMU exits with status */
    for (;;) {
    }
}

void Fault_Handler(void) {
    sh_puts("fault\n");
    sh_exit(3);
}

void Reset_Handler(void) {
    uint32_t *src = __data_load, *dst = __data_start;
    /* The FPU is off at reset: CPACR CP10/CP11 full access before any float instruction. */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n isb" ::: "memory");
    while (dst < __data_end) *dst++ = *src++;
    for (dst = __bss_start; dst < __bss_end; dst++) *dst = 0;
    sh_exit(main());
}

/* A compiler may turn loops into these calls even in freestanding code; there is no C library. */
void *memcpy(void *d, const void *s, unsigned n);
void *memset(void *d, int c, unsigned n);
void *memcpy(void *d, const void *s, unsigned n) {
    volatile uint8_t *p = d;
    const uint8_t *q = s;
    while (n--) *p++ = *q++;
    return d;
}
void *memset(void *d, int c, unsigned n) {
    volatile uint8_t *p = d;
    while (n--) *p++ = (uint8_t)c;
    return d;
}
