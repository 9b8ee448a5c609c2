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

/* Long enough for any emulation to answer, short enough to report a hang. */
#define GIC_TIMEOUT_MS		100

static u64 gicd;
static struct mem_region gicr[MAX_GICR_REGIONS];
static u32 ngicr;
/* Each CPU's SGI frame, found by that CPU itself. */
static u64 sgi_frame[MAX_CPUS];

void gic_probe(const struct dt_info *dt)
{
	u32 i;

	gicd = dt->has_gicd ? dt->gicd : 0;
	ngicr = dt->ngicr;
	for (i = 0; i < ngicr; i++)
		gicr[i] = dt->gicr[i];
}

bool gic_present(void)
{
	return gicd != 0 && ngicr != 0;
}

static bool wait_clear32(u64 addr, u32 bits)
{
	u64 deadline = counter_now() + ms_to_counts(GIC_TIMEOUT_MS);

	while (mmio_read32(addr) & bits)
		if ((s64)(counter_now() - deadline) >= 0)
			return false;
	return true;
}

bool gic_init_dist(const char **why)
{
	u32 ctlr;

	if (!gic_present()) {
		*why = "no arm,gic-v3 node with distributor and redistributor regions";
		return false;
	}
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

bool gic_init_cpu(const char **why)
{
	u32 cpu = this_cpu(), waker, i;
	u64 rd, sgi;

	if (cpu >= MAX_CPUS) {
		*why = "cpu index out of range";
		return false;
	}
	if (!gic_present()) {
		*why = "no arm,gic-v3 node with distributor and redistributor regions";
		return false;
	}
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
	mmio_write32(sgi + GICR_ICENABLER0, 0xffffffff);
	mmio_write32(sgi + GICR_IGROUPR0, 0xffffffff);
	for (i = 0; i < 8; i++)
		mmio_write32(sgi + GICR_IPRIORITYR + 4 * i, DEFAULT_PRIORITY * 0x01010101u);
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

void gic_send_sgi(u64 aff, u32 intid)
{
	u64 aff0 = aff & 0xff;
	/* Target list bit and range selector together name Aff0. */
	u64 v = (1ull << (aff0 & 0xf)) |
		((aff >> 8) & 0xff) << 16 |
		(u64)(intid & 0xf) << 24 |
		((aff >> 16) & 0xff) << 32 |
		(aff0 >> 4) << 44 |
		((aff >> 32) & 0xff) << 48;

	/* The target must see our earlier stores once it takes the SGI. */
	dsb_sy();
	write_sysreg(icc_sgi1r_el1, v);
	isb();
}

u32 gic_ack(void)
{
	return (u32)read_sysreg(icc_iar1_el1) & 0xffffff;
}

void gic_eoi(u32 iar)
{
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
	wait_clear32(gicd + GICD_CTLR, GICD_CTLR_RWP);
	/*
	 * These registers are word-only and shared with 31 (or 15) other
	 * INTIDs: written only if our bit is wrong, since each write also
	 * reaches interrupts that may belong to someone else.
	 */
	v = mmio_read32(group);
	if (!(v & group_bit))
		mmio_write32(group, v | group_bit);
	gic_dist_set_priority(intid, prio);
	/* Level-sensitive, as the trees describe device interrupts. */
	v = mmio_read32(cfg);
	if (v & edge_bit)
		mmio_write32(cfg, v & ~edge_bit);
	/* IRM 0: deliver to exactly the PE this affinity names. */
	mmio_write64(gicd + GICD_IROUTER + 8 * (u64)intid, aff & 0xff00ffffffULL);
	gic_dist_set_bit(GICD_ISENABLER, intid);
}
