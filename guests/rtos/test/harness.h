/*
 * The host tests' harness: EXPECT keeps the first failed condition of the
 * running test, run_tests runs a table of tests and prints one line per
 * test, then "<label>N passed, M failed". Shared by the kernel's and the
 * Partita library's host tests; never built into the RTOS.
 */
#ifndef RTOS_TEST_HARNESS_H
#define RTOS_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>

/* The first failed expectation of the running test, if any. */
static const char *fail_expr;
static int fail_line;

#define EXPECT(cond)						\
	do {							\
		if (!(cond) && !fail_expr) {			\
			fail_expr = #cond;			\
			fail_line = __LINE__;			\
		}						\
	} while (0)

struct test {
	const char *name;
	void (*run)(void);
};

#define TEST(fn) { #fn, fn }

/* Runs every test after `before` (may be NULL); the exit status for main. */
static inline int run_tests(const struct test *tests, unsigned n, const char *tag, const char *label,
			    void (*before)(void))
{
	unsigned i, passed = 0, failed = 0;

	for (i = 0; i < n; i++) {
		if (before)
			before();
		fail_expr = NULL;
		tests[i].run();
		if (fail_expr) {
			printf("FAIL %s%s: line %d: %s\n", tag, tests[i].name, fail_line, fail_expr);
			failed++;
		} else {
			printf("ok   %s%s\n", tag, tests[i].name);
			passed++;
		}
	}
	printf("%s%u passed, %u failed\n", label, passed, failed);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
