#include "counter.h"

u64 counter_freq(void)
{
	u64 f = read_sysreg(cntfrq_el0) & 0xffffffff;

	return f ? f : FALLBACK_CNTFRQ;
}

/* Split so that neither product can overflow for any 32-bit frequency/period. */
u64 ms_to_counts(u64 ms)
{
	u64 f = counter_freq();

	return (f / 1000) * ms + (f % 1000) * ms / 1000;
}

u64 us_to_counts(u64 us)
{
	u64 f = counter_freq();

	return (f / 1000000) * us + (f % 1000000) * us / 1000000;
}

u64 counts_to_us(u64 counts)
{
	u64 f = counter_freq();

	return counts / f * 1000000 + counts % f * 1000000 / f;
}
