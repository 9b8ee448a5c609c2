#ifndef CONSOLE_H
#define CONSOLE_H

#include "arch.h"

/* Until this is called, printing is silently dropped. */
void console_init(u64 pl011_base);
bool console_ready(void);

void putc_raw(char c);
void puts_raw(const char *s);
__attribute__((format(printf, 1, 2))) void printf(const char *fmt, ...);

#endif
