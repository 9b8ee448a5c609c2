/*
 * A GICv3 or GICv2 driver that keeps to the architecture and to the device
 * tree, so it works the same on QEMU's GIC and on a hypervisor's emulation
 * of one: a small, fixed set of registers, each accessed at its natural
 * width (bytes for priorities, 64 bits for GICR_TYPER and GICD_IROUTER, 32
 * bits for the rest). Which GIC is the tree's: an arm,gic-v3 node is driven
 * through its redistributors and the ICC system registers, group 1 only; a
 * GIC-400 (arm,gic-400, arm,cortex-a15-gic) through the per-CPU banks of its
 * distributor and its memory-mapped CPU interface, both groups as IRQs.
 * Callers see no difference: a CPU is named by its affinity either way.
 */
#ifndef GIC_H
#define GIC_H

#include "arch.h"
#include "dt.h"

/* Distributor registers; the per-interrupt ones are banks of bits or bytes. */
#define GICD_CTLR		0x0000
#define GICD_TYPER		0x0004
#define GICD_IGROUPR		0x0080
#define GICD_ISENABLER		0x0100
#define GICD_ICENABLER		0x0180
#define GICD_ISPENDR		0x0200
#define GICD_ICPENDR		0x0280
#define GICD_ISACTIVER		0x0300
#define GICD_ICACTIVER		0x0380
#define GICD_IPRIORITYR		0x0400
#define GICD_ICFGR		0x0c00
#define GICD_IROUTER		0x6000

/* ICC_IAR1_EL1 values from here up are special, not interrupts. */
#define GIC_SPECIAL_INTID	1020

/* Records the tree's GIC addresses; touches no register. */
void gic_probe(const struct dt_info *dt);
bool gic_present(void);

/* The boot CPU, once: (GICv3) affinity routing on and group 1 enabled. */
bool gic_init_dist(const char **why);
/*
 * Every CPU for itself: finds and wakes its redistributor (GICv3), makes its
 * SGIs and PPIs disabled (and, on a GICv3, group 1), and turns on its CPU
 * interface.
 */
bool gic_init_cpu(const char **why);

/* This CPU's SGIs and PPIs: its redistributor's SGI frame, or GICv2's bank. */
void gic_local_priority(u32 intid, u8 prio);
void gic_local_enable(u32 intid, bool on);
void gic_local_level(u32 intid);
u32 gic_local_pending(void);

/* aff is a cpu node's reg (MPIDR affinity layout). */
void gic_send_sgi(u64 aff, u32 intid);
/* The ICC_SGI1R_EL1 value that sends SGI intid to aff alone (GICv3). */
u64 gic_sgi1r(u64 aff, u32 intid);

u32 gic_ack(void);
void gic_eoi(u32 iar);

/* One past the highest INTID the distributor implements (GICD_TYPER). */
u32 gic_intid_limit(void);

/* SPIs through the distributor. */
void gic_spi_own(u32 intid, u8 prio, u64 aff);
void gic_dist_set_bit(u32 reg, u32 intid);
bool gic_dist_test_bit(u32 reg, u32 intid);
void gic_dist_set_priority(u32 intid, u8 prio);
u8 gic_dist_priority(u32 intid);

/*
 * What a guest should not be able to do to a hypervisor sharing its CPU
 * interface, for the tests that try: the priority mask, group 0's enable,
 * and an SGI to every other CPU in each group.
 */
void gic_priority_mask(u8 pmr);
void gic_group0_disable(void);
void gic_sgi_all_others_both_groups(u32 intid);

#endif
