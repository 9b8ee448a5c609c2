/* What the test guest needs to know from its device tree. */
#ifndef DT_H
#define DT_H

#include <stdbool.h>
#include "arch.h"

#define MAX_MEM 16
#define MAX_GICR_REGIONS 4
/* The timers' INTIDs when the tree has no usable /timer node. */
#define DEFAULT_VTIMER_INTID 27
#define DEFAULT_PTIMER_INTID 30

enum psci_method { PSCI_NONE = 0, PSCI_HVC, PSCI_SMC };

struct mem_region {
	u64 base, size;
};

struct dt_info {
	const char *bootargs;		/* NULL if absent */
	const char *partition;		/* "native" if absent */
	struct mem_region mem[MAX_MEM];
	u32 nmem;
	bool mem_truncated;		/* more regions than MAX_MEM */
	u64 cpu_mpidr[MAX_CPUS];
	u32 ncpus;			/* all cpu nodes, even past MAX_CPUS */
	enum psci_method psci;
	u64 console;			/* PL011 base, 0 if none */
	u64 gicd;			/* the GIC's distributor base, 0 if none */
	bool has_gicd;
	u32 gic_version;		/* 3 for arm,gic-v3, 2 for a GIC-400; 0 if none */
	/* The arm,gic-v3 node's redistributor regions, after the distributor. */
	struct mem_region gicr[MAX_GICR_REGIONS];
	u32 ngicr;
	u64 gicc;			/* a GICv2's CPU interface base, 0 if none */
	u32 vtimer_intid;		/* the third interrupt of the armv8-timer node */
	u32 ptimer_intid;		/* its second: the EL1 physical timer */
	u64 rtc;			/* the first arm,pl031 node's base, 0 if none */
	u32 rtc_intid;			/* its interrupt if an SPI, else 0 */
	/* /chosen/kaslr-seed and /chosen/rng-seed, in the tree; NULL if absent. */
	const u8 *kaslr_seed, *rng_seed;
	u32 kaslr_seed_len, rng_seed_len;
	/* /chosen/linux,initrd-start and -end (one or two cells); 0 if absent. */
	u64 initrd_start, initrd_end;
};

/*
 * Fills *info from the tree at dtb. On failure returns false with *why set;
 * whatever was found before the failure (the console, the PSCI method) is
 * kept so the caller can still report and power off.
 */
bool dt_read(u64 dtb, struct dt_info *info, const char **why);

#endif
