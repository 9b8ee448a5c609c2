/*
 * Polled PL011 output and a printf small enough to read in one sitting.
 * There is no lock here: the test guest keeps its CPUs from printing at the
 * same time, the RTOS prints with interrupts masked.
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

/* One conversion's flags and width, as in "%-08lx". */
struct spec {
	bool left, zero;
	u32 width;
	int longs;
};

static void pad(u32 n, char c)
{
	while (n--)
		putc_raw(c);
}

/* Prints sign (0 or 1 characters), then body, padded; returns the length. */
static int put_field(const struct spec *sp, const char *sign, const char *body, u32 len)
{
	u32 slen = sign[0] ? 1 : 0, fill = 0, i;

	if (sp->width > len + slen)
		fill = sp->width - len - slen;
	if (!sp->left && !sp->zero)
		pad(fill, ' ');
	if (slen)
		putc_raw(sign[0]);
	if (!sp->left && sp->zero)
		pad(fill, '0');
	for (i = 0; i < len; i++)
		putc_raw(body[i]);
	if (sp->left)
		pad(fill, ' ');
	return (int)(fill + slen + len);
}

static int put_unsigned(const struct spec *sp, const char *sign, u64 v, unsigned base)
{
	char buf[20];	/* 2^64 has 20 decimal digits */
	char rev[20];
	u32 n = 0, i;

	do {
		unsigned d = v % base;
		rev[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		v /= base;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = rev[n - 1 - i];
	return put_field(sp, sign, buf, n);
}

static const char *parse_spec(const char *fmt, struct spec *sp)
{
	sp->left = sp->zero = false;
	sp->width = 0;
	sp->longs = 0;
	for (;; fmt++) {
		if (*fmt == '-')
			sp->left = true;
		else if (*fmt == '0')
			sp->zero = true;
		else
			break;
	}
	while (*fmt >= '0' && *fmt <= '9')
		sp->width = sp->width * 10 + (u32)(*fmt++ - '0');
	/* size_t and long long are both 64 bits here, like long. */
	while (*fmt == 'l' || *fmt == 'z' || *fmt == 'h') {
		if (*fmt != 'h')
			sp->longs++;
		fmt++;
	}
	return fmt;
}

static int put_signed(const struct spec *sp, s64 s)
{
	if (s < 0)
		return put_unsigned(sp, "-", -(u64)s, 10);
	return put_unsigned(sp, "", (u64)s, 10);
}

static int put_string(const struct spec *sp, const char *str)
{
	u32 n = 0;

	if (!str)
		str = "(null)";
	while (str[n])
		n++;
	return put_field(sp, "", str, n);
}

int vprintf(const char *fmt, va_list ap)
{
	struct spec sp;
	int out = 0;
	char c;

	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			putc_raw(*fmt);
			out++;
			continue;
		}
		fmt = parse_spec(fmt + 1, &sp);
		switch (*fmt) {
		case 'd':
		case 'i':
			out += put_signed(&sp, sp.longs ? va_arg(ap, long) : va_arg(ap, int));
			break;
		case 'u':
		case 'x':
			out += put_unsigned(&sp, "", sp.longs ? va_arg(ap, unsigned long) :
					    va_arg(ap, unsigned int), *fmt == 'u' ? 10 : 16);
			break;
		case 'p':
			puts_raw("0x");
			out += 2 + put_unsigned(&sp, "", (u64)va_arg(ap, void *), 16);
			break;
		case 's':
			out += put_string(&sp, va_arg(ap, const char *));
			break;
		case 'c':
			c = (char)va_arg(ap, int);
			out += put_field(&sp, "", &c, 1);
			break;
		case '%':
			putc_raw('%');
			out++;
			break;
		case '\0':
			/* A lone '%' at the end: stop rather than read past the NUL. */
			fmt--;
			break;
		default:
			putc_raw('%');
			putc_raw(*fmt);
			out += 2;
			break;
		}
	}
	return out;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}
