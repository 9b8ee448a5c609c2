#ifndef CONSOLE_H
#define CONSOLE_H

#include <stdarg.h>
#include "arch.h"

/* Until this is called, printing is silently dropped. */
void console_init(u64 pl011_base);
bool console_ready(void);

void putc_raw(char c);
void puts_raw(const char *s);
/* %d %i %u %x %p %s %c %%, with - and 0 flags, a width and l/ll/z/h sizes. */
__attribute__((format(printf, 1, 2))) int printf(const char *fmt, ...);
int vprintf(const char *fmt, va_list ap);

#endif
