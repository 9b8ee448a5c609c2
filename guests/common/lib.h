/* The few C library pieces the guest needs; the compiler may call mem*. */
#ifndef LIB_H
#define LIB_H

#include <stddef.h>
#include <stdbool.h>

void *memset(void *dst, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);

/* True if the n bytes at s equal the NUL-terminated string lit. */
bool str_eq_n(const char *s, size_t n, const char *lit);
bool str_starts(const char *s, const char *prefix);

#endif
