#include "gic.h"
#include "counter.h"

#define GICD_CTLR_RWP		(1u << 31)
#define GICD_CTLR_ARE		(1u << 4)
#define GICD_CTLR_GRP1		(1u << 1)

/* Redistributor: RD_base frame, then the SGI_base frame 64 KiB on. */
#define GICR_WAKER		0x0014
#define GICR_TYPER		0x0008
#define GICR_TYPER_VLPIS	(1ull << 1)
#define GICR_TYPER_LAST		(1ull << 4)
#define GICR_WAKER_SLEEP	(1u << 1)
#define GICR_WAKER_ASLEEP	(1u << 2)
#define GICR_SGI_FRAME		0x10000
#define GICR_FRAME		0x20000
/* A GICv4 redistributor with virtual LPIs adds two more 64 KiB frames. */
#define GICR_FRAME_V4		0x40000
#define GICR_IGROUPR0		0x0080
#define GICR_ISENABLER0		0x0100
#define GICR_ICENABLER0		0x0180
#define GICR_ISPENDR0		0x0200
#define GICR_IPRIORITYR		0x0400
#define GICR_ICFGR1		0x0c04

#define ICC_SRE_SRE		(1u << 0)
#define ICC_SRE_DFB		(1u << 1)
#define ICC_SRE_DIB		(1u << 2)
#define ICC_CTLR_EOIMODE	(1u << 1)
#define DEFAULT_PRIORITY	0xa0

/* GICv2: the distributor's own SGI register and routing bytes. */
#define GICD_ITARGETSR		0x0800
#define GICD_SGIR		0x0f00
#define GICD_SGIR_OTHERS	(1u << 24)
#define GICD_SGIR_SELF		(2u << 24)
/* Secure writes only: send the SGI as group 1 rather than group 0. */
#define GICD_SGIR_NSATT		(1u << 15)
#define GICD_CTLR_V2_ENABLES	0x3
/* The GICv2 CPU interface, memory-mapped. */
#define GICC_CTLR		0x0000
#define GICC_PMR		0x0004
#define GICC_BPR		0x0008
#define GICC_IAR		0x000c
#define GICC_EOIR		0x0010
#define GICC_CTLR_GRP0		(1u << 0)
#define GICC_CTLR_GRP1		(1u << 1)
#define GICC_CTLR_ACKCTL	(1u << 2)
#define GICC_CTLR_FIQEN		(1u << 3)
#define GICC_CTLR_EOIMODE	(1u << 9)
#define GICC_IAR_INTID		0x3ff
#define GICC_IAR_CPUID_SHIFT	10
#define GICC_IAR_CPUID		(7u << GICC_IAR_CPUID_SHIFT)
#define GICV2_MAX_CPUS		8

/* Long enough for any emulation to answer, short enough to report a hang. */
#define GIC_TIMEOUT_MS		100

static u64 gicd;
static struct mem_region gicr[MAX_GICR_REGIONS];
static u32 ngicr;
/*
 * Each CPU's SGI frame, found by that CPU itself. A GICv2 banks the same
 * registers at the same offsets in the distributor, so there it is GICD.
 */
static u64 sgi_frame[MAX_CPUS];

static bool v2;
static u64 gicc;
/*
 * GICv2 names CPUs by their interface number, not their MPIDR: each CPU
 * records its own (from its banked ITARGETSR) with its affinity, so that
 * SGIs and SPIs can be aimed at an affinity.
 */
static volatile u64 v2_aff[MAX_CPUS];
static volatile u8 v2_mask[MAX_CPUS];
/*
 * An SGI's IAR carries the sender's interface number, which its EOIR must
 * repeat; gic_ack() returns the bare INTID, so the rest is kept here.
 */
static u32 v2_sgi_source[MAX_CPUS][16];

void gic_probe(const struct dt_info *dt)
{
	u32 i;

	gicd = dt->has_gicd ? dt->gicd : 0;
	v2 = dt->has_gicd && dt->gic_version == 2;
	gicc = v2 ? dt->gicc : 0;
	ngicr = v2 ? 0 : dt->ngicr;
	for (i = 0; i < ngicr; i++)
		gicr[i] = dt->gicr[i];
}

bool gic_present(void)
{
	if (v2)
		return gicd != 0 && gicc != 0;
	return gicd != 0 && ngicr != 0;
}

static const char *missing(void)
{
	if (v2)
		return "the GICv2 node has no CPU interface region";
	return "no arm,gic-v3 node with distributor and redistributor regions";
}

static bool wait_clear32(u64 addr, u32 bits)
{
	u64 deadline = counter_now() + ms_to_counts(GIC_TIMEOUT_MS);

	while (mmio_read32(addr) & bits)
		if ((s64)(counter_now() - deadline) >= 0)
			return false;
	return true;
}

/*
 * Both groups on: natively on a GIC without the Security Extensions every
 * interrupt starts in group 0, under a hypervisor the group is the one it
 * injects with, and a Non-secure view has only its own enable in bit 0.
 */
static bool init_dist_v2(const char **why)
{
	mmio_write32(gicd + GICD_CTLR, GICD_CTLR_V2_ENABLES);
	if (!(mmio_read32(gicd + GICD_CTLR) & GICD_CTLR_V2_ENABLES)) {
		*why = "GICD_CTLR enables do not stick";
		return false;
	}
	return true;
}

bool gic_init_dist(const char **why)
{
	u32 ctlr;

	if (!gic_present()) {
		*why = missing();
		return false;
	}
	if (v2)
		return init_dist_v2(why);
	/* ARE may only change while both groups are disabled. */
	ctlr = mmio_read32(gicd + GICD_CTLR);
	if (!(ctlr & GICD_CTLR_ARE)) {
		mmio_write32(gicd + GICD_CTLR, GICD_CTLR_ARE);
		wait_clear32(gicd + GICD_CTLR, GICD_CTLR_RWP);
	}
	ctlr = mmio_read32(gicd + GICD_CTLR) & ~GICD_CTLR_RWP;
	mmio_write32(gicd + GICD_CTLR, ctlr | GICD_CTLR_ARE | GICD_CTLR_GRP1);
	if (!wait_clear32(gicd + GICD_CTLR, GICD_CTLR_RWP)) {
		*why = "GICD_CTLR.RWP stays set";
		return false;
	}
	if (!(mmio_read32(gicd + GICD_CTLR) & GICD_CTLR_ARE)) {
		*why = "GICD_CTLR.ARE does not stick";
		return false;
	}
	return true;
}

/* GICR_TYPER[63:32] holds Aff3.Aff2.Aff1.Aff0; MPIDR keeps Aff3 apart. */
static u32 packed_affinity(u64 aff)
{
	return (u32)(aff & 0xffffff) | (u32)((aff >> 32) & 0xff) << 24;
}

static u64 find_redistributor(void)
{
	u32 want = packed_affinity(current_mpidr_affinity());
	u32 r;

	for (r = 0; r < ngicr; r++) {
		u64 off = 0;

		while (off + GICR_FRAME <= gicr[r].size) {
			u64 rd = gicr[r].base + off;
			u64 typer = mmio_read64(rd + GICR_TYPER);

			if ((u32)(typer >> 32) == want)
				return rd;
			if (typer & GICR_TYPER_LAST)
				break;
			off += (typer & GICR_TYPER_VLPIS) ? GICR_FRAME_V4 : GICR_FRAME;
		}
	}
	return 0;
}

static void local_clean_slate(u64 sgi)
{
	u32 i;

	mmio_write32(sgi + GICR_ICENABLER0, 0xffffffff);
	if (!v2)
		mmio_write32(sgi + GICR_IGROUPR0, 0xffffffff);
	for (i = 0; i < 8; i++)
		mmio_write32(sgi + GICR_IPRIORITYR + 4 * i, DEFAULT_PRIORITY * 0x01010101u);
}

/*
 * The groups are left as they are (a Non-secure view cannot change them)
 * and both are taken as IRQs: AckCtl lets IAR return a group 1 interrupt
 * too, FIQEn 0 keeps group 0 off FIQ, EOImode 0 makes EOIR also deactivate.
 */
static bool init_cpu_v2(u32 cpu, const char **why)
{
	u32 ctlr, mask = 0, i;

	/* Any of SGIs 0-7 reads as this CPU's own bit; 0 on a uniprocessor. */
	for (i = 0; i < 8 && !mask; i++)
		mask = mmio_read8(gicd + GICD_ITARGETSR + i);
	v2_mask[cpu] = (u8)mask;
	v2_aff[cpu] = current_mpidr_affinity();
	local_clean_slate(gicd);
	sgi_frame[cpu] = gicd;

	mmio_write32(gicc + GICC_PMR, 0xff);
	mmio_write32(gicc + GICC_BPR, 0);
	ctlr = mmio_read32(gicc + GICC_CTLR) & ~(GICC_CTLR_FIQEN | GICC_CTLR_EOIMODE);
	mmio_write32(gicc + GICC_CTLR, ctlr | GICC_CTLR_GRP0 | GICC_CTLR_GRP1 | GICC_CTLR_ACKCTL);
	if (!(mmio_read32(gicc + GICC_CTLR) & GICC_CTLR_GRP0)) {
		*why = "GICC_CTLR enable does not stick";
		return false;
	}
	return true;
}

bool gic_init_cpu(const char **why)
{
	u32 cpu = this_cpu(), waker;
	u64 rd, sgi;

	if (cpu >= MAX_CPUS) {
		*why = "cpu index out of range";
		return false;
	}
	if (!gic_present()) {
		*why = missing();
		return false;
	}
	if (v2)
		return init_cpu_v2(cpu, why);
	if (((read_sysreg(id_aa64pfr0_el1) >> 24) & 0xf) == 0) {
		*why = "no GICv3 system register interface (ID_AA64PFR0_EL1.GIC)";
		return false;
	}
	rd = find_redistributor();
	if (!rd) {
		*why = "no redistributor frame matches this cpu's MPIDR";
		return false;
	}
	waker = mmio_read32(rd + GICR_WAKER);
	if (waker & GICR_WAKER_SLEEP)
		mmio_write32(rd + GICR_WAKER, waker & ~GICR_WAKER_SLEEP);
	if (!wait_clear32(rd + GICR_WAKER, GICR_WAKER_ASLEEP)) {
		*why = "GICR_WAKER.ChildrenAsleep stays set";
		return false;
	}

	/* A clean slate: whatever ran before us may have left SGIs/PPIs on. */
	sgi = rd + GICR_SGI_FRAME;
	local_clean_slate(sgi);
	sgi_frame[cpu] = sgi;

	write_sysreg(icc_sre_el1, read_sysreg(icc_sre_el1) | ICC_SRE_SRE | ICC_SRE_DFB | ICC_SRE_DIB);
	isb();
	if (!(read_sysreg(icc_sre_el1) & ICC_SRE_SRE)) {
		*why = "ICC_SRE_EL1.SRE stays 0";
		return false;
	}
	write_sysreg(icc_pmr_el1, 0xff);
	write_sysreg(icc_bpr1_el1, 0);
	/* EOImode 0: one EOIR write both drops the priority and deactivates. */
	write_sysreg(icc_ctlr_el1, read_sysreg(icc_ctlr_el1) & ~(u64)ICC_CTLR_EOIMODE);
	write_sysreg(icc_igrpen1_el1, 1);
	isb();
	return true;
}

/*
 * Priority fields are byte-accessible by the architecture; a word-wide
 * read-modify-write would also rewrite three neighbours, which may not be
 * ours to touch.
 */
static void set_priority(u64 base, u32 intid, u8 prio)
{
	mmio_write8(base + intid, prio);
}

void gic_local_priority(u32 intid, u8 prio)
{
	set_priority(sgi_frame[this_cpu()] + GICR_IPRIORITYR, intid, prio);
}

void gic_local_enable(u32 intid, bool on)
{
	u64 sgi = sgi_frame[this_cpu()];

	mmio_write32(sgi + (on ? GICR_ISENABLER0 : GICR_ICENABLER0), 1u << (intid & 31));
}

/* ICFGR1 has two bits per PPI; the upper one set means edge-triggered. */
void gic_local_level(u32 intid)
{
	u64 reg = sgi_frame[this_cpu()] + GICR_ICFGR1;
	u32 bit = 2 * (intid - 16) + 1;

	if (intid < 16 || intid >= 32)
		return;

	mmio_write32(reg, mmio_read32(reg) & ~(1u << bit));
}

u32 gic_local_pending(void)
{
	return mmio_read32(sgi_frame[this_cpu()] + GICR_ISPENDR0);
}

/*
 * The interface mask of the CPU with affinity aff, as that CPU recorded
 * it; one that has not yet is taken to be numbered by its Aff0, as on
 * QEMU's virt, a ZynqMP and Partita's vCPUs.
 */
static u32 v2_target(u64 aff)
{
	u32 i;

	aff &= 0xff00ffffffULL;
	for (i = 0; i < MAX_CPUS; i++)
		if (v2_mask[i] && v2_aff[i] == aff)
			return v2_mask[i];
	return (aff & 0xff) < GICV2_MAX_CPUS ? 1u << (aff & 0xff) : 0;
}

static void send_sgi_v2(u64 aff, u32 intid)
{
	u32 v = intid & 0xf;

	/* Aimed at itself by the filter: a uniprocessor has no mask to name. */
	if ((aff & 0xff00ffffffULL) == current_mpidr_affinity())
		v |= GICD_SGIR_SELF;
	else
		v |= v2_target(aff) << 16;
	dsb_sy();
	mmio_write32(gicd + GICD_SGIR, v);
}

u64 gic_sgi1r(u64 aff, u32 intid)
{
	u64 aff0 = aff & 0xff;

	/* Target list bit and range selector together name Aff0. */
	return (1ull << (aff0 & 0xf)) |
		((aff >> 8) & 0xff) << 16 |
		(u64)(intid & 0xf) << 24 |
		((aff >> 16) & 0xff) << 32 |
		(aff0 >> 4) << 44 |
		((aff >> 32) & 0xff) << 48;
}

static void send_sgi_v3(u64 aff, u32 intid)
{
	u64 v = gic_sgi1r(aff, intid);

	/* The target must see our earlier stores once it takes the SGI. */
	dsb_sy();
	write_sysreg(icc_sgi1r_el1, v);
	isb();
}

void gic_send_sgi(u64 aff, u32 intid)
{
	if (v2)
		send_sgi_v2(aff, intid);
	else
		send_sgi_v3(aff, intid);
}

static u32 ack_v2(void)
{
	u32 iar = mmio_read32(gicc + GICC_IAR), intid = iar & GICC_IAR_INTID;
	u32 cpu = this_cpu();

	if (intid < 16 && cpu < MAX_CPUS)
		v2_sgi_source[cpu][intid] = iar & GICC_IAR_CPUID;
	return intid;
}

u32 gic_ack(void)
{
	if (v2)
		return ack_v2();
	return (u32)read_sysreg(icc_iar1_el1) & 0xffffff;
}

void gic_eoi(u32 iar)
{
	if (v2) {
		u32 cpu = this_cpu();

		if (iar < 16 && cpu < MAX_CPUS)
			iar |= v2_sgi_source[cpu][iar];
		mmio_write32(gicc + GICC_EOIR, iar);
		return;
	}
	write_sysreg(icc_eoir1_el1, iar);
	isb();
}

u32 gic_intid_limit(void)
{
	u32 lines = mmio_read32(gicd + GICD_TYPER) & 0x1f;
	u32 limit = 32 * (lines + 1);

	/* 1020-1023 are special even when ITLinesNumber is 31. */
	return limit > GIC_SPECIAL_INTID ? GIC_SPECIAL_INTID : limit;
}

void gic_dist_set_bit(u32 reg, u32 intid)
{
	mmio_write32(gicd + reg + 4 * (intid / 32), 1u << (intid % 32));
}

bool gic_dist_test_bit(u32 reg, u32 intid)
{
	return (mmio_read32(gicd + reg + 4 * (intid / 32)) >> (intid % 32)) & 1;
}

void gic_dist_set_priority(u32 intid, u8 prio)
{
	set_priority(gicd + GICD_IPRIORITYR, intid, prio);
}

u8 gic_dist_priority(u32 intid)
{
	return mmio_read8(gicd + GICD_IPRIORITYR + intid);
}

/*
 * Changing the group or trigger of an enabled interrupt is UNPREDICTABLE, so
 * it is disabled first. A pending state from before is kept: for a doorbell
 * it is a ring that came before the handler, which must not be lost.
 */
void gic_spi_own(u32 intid, u8 prio, u64 aff)
{
	u64 group = gicd + GICD_IGROUPR + 4 * (intid / 32);
	u64 cfg = gicd + GICD_ICFGR + 4 * (intid / 16);

	u32 group_bit = 1u << (intid % 32), edge_bit = 1u << (2 * (intid % 16) + 1);
	u32 v;

	gic_dist_set_bit(GICD_ICENABLER, intid);
	if (!v2)
		wait_clear32(gicd + GICD_CTLR, GICD_CTLR_RWP);
	/*
	 * These registers are word-only and shared with 31 (or 15) other
	 * INTIDs: written only if our bit is wrong, since each write also
	 * reaches interrupts that may belong to someone else.
	 */
	v = mmio_read32(group);
	if (!v2 && !(v & group_bit))
		mmio_write32(group, v | group_bit);
	gic_dist_set_priority(intid, prio);
	/* Level-sensitive, as the trees describe device interrupts. */
	v = mmio_read32(cfg);
	if (v & edge_bit)
		mmio_write32(cfg, v & ~edge_bit);
	if (v2) {
		u32 mask = (aff & 0xff00ffffffULL) == current_mpidr_affinity() ?
			   v2_mask[this_cpu()] : v2_target(aff);

		/* A uniprocessor's ITARGETSR is RAZ/WI: nothing to aim. */
		if (mask)
			mmio_write8(gicd + GICD_ITARGETSR + intid, (u8)mask);
	} else {
		/* IRM 0: deliver to exactly the PE this affinity names. */
		mmio_write64(gicd + GICD_IROUTER + 8 * (u64)intid, aff & 0xff00ffffffULL);
	}
	gic_dist_set_bit(GICD_ISENABLER, intid);
}

void gic_priority_mask(u8 pmr)
{
	if (v2)
		mmio_write32(gicc + GICC_PMR, pmr);
	else
		write_sysreg(icc_pmr_el1, pmr);
}

void gic_group0_disable(void)
{
	if (v2)
		mmio_write32(gicc + GICC_CTLR, mmio_read32(gicc + GICC_CTLR) & ~GICC_CTLR_GRP0);
	else
		write_sysreg(S3_0_C12_C12_6, 0); /* ICC_IGRPEN0_EL1 */
}

/* ICC_SGIxR_EL1: IRM (every core but this one) and the INTID. */
#define SGI_TO_ALL_OTHERS(intid) ((1ull << 40) | ((u64)(intid) << 24))

void gic_sgi_all_others_both_groups(u32 intid)
{
	if (v2) {
		u32 v = GICD_SGIR_OTHERS | (intid & 0xf);

		dsb_sy();
		mmio_write32(gicd + GICD_SGIR, v);
		mmio_write32(gicd + GICD_SGIR, v | GICD_SGIR_NSATT);
		return;
	}
	write_sysreg(S3_0_C12_C11_7, SGI_TO_ALL_OTHERS(intid)); /* ICC_SGI0R_EL1 */
	write_sysreg(icc_sgi1r_el1, SGI_TO_ALL_OTHERS(intid));
	isb();
}
