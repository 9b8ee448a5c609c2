#include "psci.h"
#include "console.h"

/*
 * SMCCC v1.1: results in x0-x3, x4-x17 may be clobbered, everything else is
 * preserved. Declaring the clobbers keeps gcc from caching values there.
 */
#define SMCCC_CLOBBERS "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", \
	"x13", "x14", "x15", "x16", "x17", "memory"

s64 smccc_call(enum psci_method m, u64 fn, u64 a1, u64 a2, u64 a3)
{
	register u64 x0 __asm__("x0") = fn;
	register u64 x1 __asm__("x1") = a1;
	register u64 x2 __asm__("x2") = a2;
	register u64 x3 __asm__("x3") = a3;

	if (m == PSCI_SMC)
		__asm__ volatile("smc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3)
				 : : SMCCC_CLOBBERS);
	else
		__asm__ volatile("hvc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3)
				 : : SMCCC_CLOBBERS);
	return (s64)x0;
}

void power_off(enum psci_method m)
{
	/* Without a psci node, hvc is what QEMU virt and Partita both answer. */
	smccc_call(m == PSCI_NONE ? PSCI_HVC : m, PSCI_SYSTEM_OFF, 0, 0, 0);
	printf("system off failed\n");
	halt();
}

void reset(enum psci_method m)
{
	smccc_call(m == PSCI_NONE ? PSCI_HVC : m, PSCI_SYSTEM_RESET, 0, 0, 0);
	printf("system reset failed\n");
	halt();
}
