/* Output through the debugger (semihosting): all the board I/O this example needs. */
#ifndef SEMIHOST_H
#define SEMIHOST_H
void sh_puts(const char *s);
__attribute__((noreturn)) void sh_exit(int status);
#endif
