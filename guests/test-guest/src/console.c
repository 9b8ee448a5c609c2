/*
 * Polled PL011 output and a printf small enough to read in one sitting.
 * There is no lock: the boot CPU starts secondaries one at a time and waits
 * for each to finish its only line, so lines never interleave.
 */
#include <stdarg.h>
#include <stdbool.h>
#include "console.h"

#define UARTDR 0x00
#define UARTFR 0x18
#define UARTFR_TXFF (1u << 5)

static u64 uart_base;

void console_init(u64 pl011_base)
{
	uart_base = pl011_base;
}

bool console_ready(void)
{
	return uart_base != 0;
}

void putc_raw(char c)
{
	if (!uart_base)
		return;
	while (mmio_read32(uart_base + UARTFR) & UARTFR_TXFF)
		;
	mmio_write32(uart_base + UARTDR, (u8)c);
}

void puts_raw(const char *s)
{
	while (*s)
		putc_raw(*s++);
}

static void put_unsigned(u64 v, unsigned base)
{
	char buf[20];	/* 2^64 has 20 decimal digits */
	int n = 0;

	do {
		unsigned d = v % base;
		buf[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		v /= base;
	} while (v);
	while (n)
		putc_raw(buf[--n]);
}

void printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	for (; *fmt; fmt++) {
		int longs = 0;
		u64 u;
		s64 s;

		if (*fmt != '%') {
			putc_raw(*fmt);
			continue;
		}
		fmt++;
		while (*fmt == 'l') {
			longs++;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
			s = longs ? va_arg(ap, long) : va_arg(ap, int);
			if (s < 0) {
				putc_raw('-');
				u = -(u64)s;
			} else {
				u = (u64)s;
			}
			put_unsigned(u, 10);
			break;
		case 'u':
		case 'x':
			u = longs ? va_arg(ap, unsigned long) : va_arg(ap, unsigned int);
			put_unsigned(u, *fmt == 'u' ? 10 : 16);
			break;
		case 'p':
			puts_raw("0x");
			put_unsigned((u64)va_arg(ap, void *), 16);
			break;
		case 's': {
			const char *str = va_arg(ap, const char *);
			puts_raw(str ? str : "(null)");
			break;
		}
		case 'c':
			putc_raw((char)va_arg(ap, int));
			break;
		case '%':
			putc_raw('%');
			break;
		case '\0':
			/* A lone '%' at the end: stop rather than read past the NUL. */
			fmt--;
			break;
		default:
			putc_raw('%');
			putc_raw(*fmt);
			break;
		}
	}
	va_end(ap);
}
