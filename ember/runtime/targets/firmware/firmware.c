/* Semihosting output and exit, fault reports, and the few memory functions a compiler may call.
 *
 * Built for every test target (Cortex-M and RISC-V). Exit statuses: what main returned, or 3 for a
 * CPU fault/trap (see fw_fault_exit); ember/runtime/targets/mcu.py reads them from QEMU's exit status.
 */
#include "firmware.h"

#define FAULT_STATUS 3

void fw_puts(const char *s) { sh_trap(SH_SYS_WRITE0, (uintptr_t)s); }

void fw_putc(char c) { sh_trap(SH_SYS_WRITEC, (uintptr_t)&c); }

static const char HEX[] = "0123456789abcdef";

void fw_put_hex32(uint32_t v) {
    char buf[9];
    int i;
    for (i = 7; i >= 0; i--) {
        buf[i] = HEX[v & 0xf];
        v >>= 4;
    }
    buf[8] = 0;
    fw_puts(buf);
}

void fw_put_dec(uint32_t v) {
    char buf[11];
    int i = 10;
    buf[i] = 0;
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    fw_puts(buf + i);
}

void fw_put_bytes_hex(const uint8_t *p, size_t n) {
    /* One semihosting call per 64 bytes: each call is a trap to the host, a character at a time
       would dominate the run time of small models. */
    char buf[2 * 64 + 1];
    while (n > 0) {
        size_t k = n < 64 ? n : 64, i;
        for (i = 0; i < k; i++) {
            buf[2 * i] = HEX[p[i] >> 4];
            buf[2 * i + 1] = HEX[p[i] & 0xf];
        }
        buf[2 * k] = 0;
        fw_puts(buf);
        p += k;
        n -= k;
    }
}

void fw_exit(int status) {
    /* SYS_EXIT_EXTENDED carries an exit status on 32-bit targets (plain SYS_EXIT only says
       "stopped normally or not"); QEMU exits with it. */
    uintptr_t block[2];
    block[0] = SH_ADP_STOPPED_APPLICATION_EXIT;
    block[1] = (uintptr_t)(unsigned)status;
    sh_trap(SH_SYS_EXIT_EXTENDED, (uintptr_t)block);
    for (;;) {
        /* not reached under QEMU; a board without a debugger attached would stop here */
    }
}

/* --------------------------------------------------------------------------- stack use */
#define STACK_PAINT 0x5AC3A55Cu
extern uint32_t __stack_bottom[], __stack_top[];

uint32_t fw_stack_used(void) {
    const uint32_t *p = __stack_bottom;
    while (p < __stack_top && *p == STACK_PAINT) p++;
    return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

/* --------------------------------------------------------------------------- instruction count */
#if defined(__arm__)
/* SysTick runs down from 0xFFFFFF on the core clock; with QEMU's -icount that clock advances a
   fixed number of nanoseconds per executed instruction, so ticks convert exactly to instructions. */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_RELOAD 0xFFFFFFu
static volatile uint32_t systick_wraps;

void SysTick_Handler(void);
void SysTick_Handler(void) { systick_wraps++; }

void fw_count_start(void) {
    SYST_CSR = 0;
    SYST_RVR = SYST_RELOAD;
    SYST_CVR = 0; /* any write clears it; it reloads on the next tick */
    systick_wraps = 0;
    SYST_CSR = 7; /* ENABLE | TICKINT | CLKSOURCE = core clock */
}

void fw_count_stop(uint32_t *hi, uint32_t *lo) {
    uint32_t now = SYST_CVR, wraps;
    uint64_t ticks;
    SYST_CSR = 0;
    wraps = systick_wraps;
    /* Ticks since start: the first tick loads RELOAD, each wrap adds RELOAD + 1. */
    ticks = (uint64_t)wraps * (SYST_RELOAD + 1u) + (SYST_RELOAD - now) + 1u;
    *hi = (uint32_t)(ticks >> 32);
    *lo = (uint32_t)ticks;
}
#elif defined(__riscv)
static uint64_t read_instret(void) {
    uint32_t hi, lo, again;
    do {
        __asm__ volatile("csrr %0, minstreth" : "=r"(hi));
        __asm__ volatile("csrr %0, minstret" : "=r"(lo));
        __asm__ volatile("csrr %0, minstreth" : "=r"(again));
    } while (hi != again);
    return ((uint64_t)hi << 32) | lo;
}
static uint64_t instret_start;

void fw_count_start(void) { instret_start = read_instret(); }

void fw_count_stop(uint32_t *hi, uint32_t *lo) {
    uint64_t n = read_instret() - instret_start;
    *hi = (uint32_t)(n >> 32);
    *lo = (uint32_t)n;
}
#endif

/* --------------------------------------------------------------------------- faults */
static void put_field(const char *name, uint32_t v) {
    fw_puts(" ");
    fw_puts(name);
    fw_puts("=0x");
    fw_put_hex32(v);
}

#if defined(__arm__)
#define REG32(addr) (*(volatile uint32_t *)(addr))

/* Called from Fault_Handler (startup.S) with the stacked exception frame r0-r3, r12, lr, pc, xpsr. */
void fw_arm_fault(const uint32_t *frame, uint32_t ipsr, uint32_t exc_return) __attribute__((noreturn));
void fw_arm_fault(const uint32_t *frame, uint32_t ipsr, uint32_t exc_return) {
    fw_puts("\nFAULT: exception ");
    fw_put_dec(ipsr & 0x1ff);
    fw_puts(" (3 HardFault, 4 MemManage, 5 BusFault, 6 UsageFault, 7 SecureFault)\n");
    put_field("pc", frame[6]);
    put_field("lr", frame[5]);
    put_field("xpsr", frame[7]);
    put_field("exc_return", exc_return);
    /* Configurable/HardFault status and fault addresses (SCB). They are reserved on ARMv6-M, but the
       cortex-m0 firmware runs on an M3 (QEMU has no M0 board), where they exist. */
    put_field("CFSR", REG32(0xE000ED28));
    put_field("HFSR", REG32(0xE000ED2C));
    put_field("MMFAR", REG32(0xE000ED34));
    put_field("BFAR", REG32(0xE000ED38));
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
    put_field("SFSR", REG32(0xE000EDE4));
    put_field("SFAR", REG32(0xE000EDE8));
#endif
    fw_puts("\n(CFSR bits: 0x01000000 unaligned, 0x02000000 divide by 0, 0x00010000 undefined instruction,"
            " 0x00080000 no coprocessor = FPU/MVE disabled, 0x00008200 precise bus fault at BFAR)\n");
    fw_exit(FAULT_STATUS);
}
#endif

#if defined(__riscv)
/* Called from trap_entry (start.S); every trap is fatal in this firmware. */
void fw_riscv_trap(uint32_t mcause, uint32_t mepc, uint32_t mtval) __attribute__((noreturn));
void fw_riscv_trap(uint32_t mcause, uint32_t mepc, uint32_t mtval) {
    fw_puts("\nFAULT: trap");
    put_field("mcause", mcause);
    put_field("mepc", mepc);
    put_field("mtval", mtval);
    fw_puts("\n(mcause: 0 misaligned fetch, 2 illegal instruction (FPU off?), 4/6 misaligned load/store,"
            " 5/7 load/store access fault)\n");
    fw_exit(FAULT_STATUS);
}
#endif

/* --------------------------------------------------------------------------- memory functions */
/* Compilers may call these even for freestanding code (struct copies, large initializers); the
   bundle itself must not (ember's tests check its object has no such undefined symbols). Byte loops
   on volatile pointers, so that the optimizer cannot turn them back into calls to themselves. */
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);

void *memcpy(void *dst, const void *src, size_t n) {
    volatile uint8_t *d = dst;
    const volatile uint8_t *s = src;
    while (n--) *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    volatile uint8_t *d = dst;
    const volatile uint8_t *s = src;
    if (d < s) {
        while (n--) *d++ = *s++;
    } else {
        d += n;
        s += n;
        while (n--) *--d = *--s;
    }
    return dst;
}

void *memset(void *dst, int c, size_t n) {
    volatile uint8_t *d = dst;
    while (n--) *d++ = (uint8_t)c;
    return dst;
}
