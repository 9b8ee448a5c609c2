/* The generic counter's frequency and conversions from milli- and microseconds. */
#ifndef COUNTER_H
#define COUNTER_H

#include "arch.h"

/* Only if CNTFRQ_EL0 was left unset by firmware: QEMU virt's own value. */
#define FALLBACK_CNTFRQ 62500000

u64 counter_freq(void);
u64 ms_to_counts(u64 ms);
u64 us_to_counts(u64 us);
u64 counts_to_us(u64 counts);

#endif
