/*
 * The guests' own string helpers, apart from lib.c's C library pieces so
 * that host tests can link them next to the host's C library.
 */
#include "lib.h"

bool str_eq_n(const char *s, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (lit[i] == '\0' || lit[i] != s[i])
			return false;
	return lit[n] == '\0';
}

bool str_starts(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return false;
	return true;
}
