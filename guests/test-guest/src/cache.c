/*
 * Clean and invalidate every data/unified cache level to the point of
 * coherency by set/way (Arm ARM D7.4 / the "CleanInvalidateAll" example).
 * A hypervisor must trap this (HCR_EL2.TSW): run natively it reaches every
 * line of the cache, whoever owns it.
 */
#include "arch.h"

void dcache_clean_invalidate_all(void)
{
	u64 clidr = read_sysreg(clidr_el1);
	/* FEAT_CCIDX changes the CCSIDR_EL1 layout. */
	bool ccidx = ((read_sysreg(id_aa64mmfr2_el1) >> 20) & 0xf) != 0;
	u32 loc = (clidr >> 24) & 7;
	u32 level;

	dsb_sy();
	for (level = 0; level < loc; level++) {
		u32 ctype = (clidr >> (level * 3)) & 7;
		u64 ccsidr, sets, ways, way, set;
		u32 line_shift, way_shift;

		/* 0: no cache, 1: instruction only. */
		if (ctype < 2)
			continue;
		write_sysreg(csselr_el1, level << 1);
		isb();
		ccsidr = read_sysreg(ccsidr_el1);
		line_shift = (ccsidr & 7) + 4;
		if (ccidx) {
			ways = ((ccsidr >> 3) & 0x1fffff) + 1;
			sets = ((ccsidr >> 32) & 0xffffff) + 1;
		} else {
			ways = ((ccsidr >> 3) & 0x3ff) + 1;
			sets = ((ccsidr >> 13) & 0x7fff) + 1;
		}
		/* The way index sits in the top bits; a 1-way cache has no way field. */
		way_shift = ways > 1 ? __builtin_clz((u32)(ways - 1)) : 0;
		for (way = 0; way < ways; way++)
			for (set = 0; set < sets; set++) {
				u64 sw = way << way_shift | set << line_shift | level << 1;

				__asm__ volatile("dc cisw, %0" : : "r"(sw) : "memory");
			}
	}
	write_sysreg(csselr_el1, 0);
	dsb_sy();
	isb();
}
