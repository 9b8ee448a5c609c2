/*
 * Architecture conformance (arch=...): what a bare-metal guest expects of
 * the machine it runs on, natively or under a hypervisor. Each test takes
 * exceptions in its own vector table (archvec.S), looks at what the
 * architecture says it must see, and goes on.
 *
 * - abort: loads from and branches to an address outside its memory, from
 *   EL1 on SP_EL1 and on SP_EL0, and from EL0: synchronous external aborts.
 * - undef: an implementation-defined register, an unallocated one and the
 *   EL1 physical timer, each either read or UNDEFINED.
 * - pmu: the ID registers, which advertise no PMU where there is none to use.
 * - debug: a hardware breakpoint, software step and a watchpoint.
 * - debug-keep: the debug registers keep their values while the vCPU
 *   shares its core (arch_rounds rounds, values from arch_seed).
 */
#include "guest.h"
#include "console.h"
#include "lib.h"

/* ESR_EL1 classes. */
#define EC_UNKNOWN		0x00
#define EC_IABT_LOWER		0x20
#define EC_IABT_CUR		0x21
#define EC_DABT_LOWER		0x24
#define EC_DABT_CUR		0x25
#define EC_BREAKPOINT_CUR	0x31
#define EC_STEP_CUR		0x33
#define EC_WATCHPOINT_CUR	0x35

#define ESR_IL		(1ull << 25)
#define ESR_ISV		(1ull << 24)
#define ESR_WNR		(1ull << 6)
#define SPSR_SS		(1ull << 21)
#define SPSR_EL1H_MASKED 0x3c5ull

#define MDSCR_SS	(1ull << 0)
#define MDSCR_KDE	(1ull << 13)
#define MDSCR_MDE	(1ull << 15)
/* Address match at EL1 and EL0, whole A64 instruction; E in bit 0. */
#define BCR_EL1_EL0	((0xfull << 5) | (3ull << 1))
/* Stores to any of 8 bytes, at EL1 and EL0; E in bit 0. */
#define WCR_STORE_8	((0xffull << 5) | (2ull << 3) | (3ull << 1))
#define CTRL_E		1ull

#define STEPS		3
#define MAX_PAIRS	16

struct arch_frame {
	u64 x[31];
	u64 elr, spsr, esr, far;
};

/* What the last synchronous exception looked like. */
struct seen {
	u32 count;
	u64 esr, elr, far, spsr, vector;
};

static volatile struct seen seen;
static volatile u64 step_elr[STEPS];
static volatile u32 steps_left, steps_taken;
static volatile u64 watched __attribute__((aligned(8)));

/* archvec.S */
extern char arch_vectors[];
u64 arch_load(u64 addr);
extern char arch_load_insn[];
void arch_branch(u64 addr);
void arch_store(u64 addr, u32 value);
u64 arch_load_sp0(u64 addr);
extern char arch_load_sp0_insn[];
void arch_load_el0(u64 addr);
extern char arch_el0_insn[], arch_el0_back[];
u64 arch_read_impdef(void);
extern char arch_read_impdef_insn[];
u64 arch_read_unknown(void);
extern char arch_read_unknown_insn[];
u64 arch_read_cntp(void);
extern char arch_read_cntp_insn[];
u64 arch_read_pmcr(void);
u64 arch_bp_target(void);
u64 arch_probe(void);
void arch_step_run(void);
extern char arch_step_code[];

void arch_sync(struct arch_frame *f, u64 vector);

static u32 esr_class(u64 esr)
{
	return (u32)(esr >> 26) & 0x3f;
}

static void step_taken(struct arch_frame *f)
{
	if (steps_taken < STEPS)
		step_elr[steps_taken] = f->elr;
	steps_taken++;
	if (--steps_left)
		f->spsr |= SPSR_SS;
	else
		write_sysreg(mdscr_el1, read_sysreg(mdscr_el1) & ~MDSCR_SS);
}

/*
 * Notes what was taken and resumes: past a faulting load or register, at
 * the caller of a bad branch, back at EL1 after an EL0 fault; a breakpoint
 * or watchpoint is disabled so the instruction runs on return. Anything
 * else is reported as head.S does, and the CPU halts.
 */
void arch_sync(struct arch_frame *f, u64 vector)
{
	u32 ec = esr_class(f->esr);

	seen.esr = f->esr;
	seen.elr = f->elr;
	seen.far = f->far;
	seen.spsr = f->spsr;
	seen.vector = vector;
	seen.count++;
	if (ec == EC_UNKNOWN || ec == EC_DABT_CUR) {
		f->elr += 4;
	} else if (ec == EC_IABT_CUR) {
		f->elr = f->x[30];
	} else if (ec == EC_DABT_LOWER) {
		f->elr = (u64)arch_el0_back;
		f->spsr = SPSR_EL1H_MASKED;
	} else if (ec == EC_BREAKPOINT_CUR) {
		write_sysreg(dbgbcr0_el1, read_sysreg(dbgbcr0_el1) & ~CTRL_E);
	} else if (ec == EC_WATCHPOINT_CUR) {
		write_sysreg(dbgwcr0_el1, read_sysreg(dbgwcr0_el1) & ~CTRL_E);
	} else if (ec == EC_STEP_CUR) {
		step_taken(f);
	} else {
		exception_report(f->esr, f->elr, f->far);
	}
	isb();
}

static const char *ok(bool good)
{
	return good ? "ok" : "WRONG";
}

/* The address just past the region that ends highest: outside our memory. */
static u64 outside(const struct dt_info *dt)
{
	u64 end = 0;
	u32 i;

	for (i = 0; i < dt->nmem; i++)
		if (dt->mem[i].base + dt->mem[i].size > end)
			end = dt->mem[i].base + dt->mem[i].size;
	return end;
}

static void report_abort(const char *what, u32 before, u64 far, u64 elr)
{
	if (seen.count == before) {
		printf("arch abort: %s: no exception\n", what);
		return;
	}
	printf("arch abort: %s: EC 0x%x FSC 0x%lx ISV %u FAR %s ELR %s vector 0x%lx\n", what, esr_class(seen.esr),
	       seen.esr & 0x3f, (u32)((seen.esr & ESR_ISV) != 0), ok(seen.far == far), ok(seen.elr == elr), seen.vector);
}

static void abort_test(const struct dt_info *dt)
{
	u64 bad = outside(dt);
	u32 before;

	printf("arch abort: at 0x%lx\n", bad);
	before = seen.count;
	arch_load(bad);
	report_abort("load", before, bad, (u64)arch_load_insn);
	before = seen.count;
	arch_branch(bad);
	report_abort("branch", before, bad, bad);
	before = seen.count;
	arch_load_sp0(bad);
	report_abort("load on sp_el0", before, bad, (u64)arch_load_sp0_insn);
	before = seen.count;
	arch_load_el0(bad);
	report_abort("load at el0", before, bad, (u64)arch_el0_insn);
	printf("arch abort: done\n");
}

static void report_undef(const char *what, u32 before, u64 value, u64 elr)
{
	if (seen.count == before) {
		printf("arch undef: %s: read 0x%lx\n", what, value);
		return;
	}
	printf("arch undef: %s: EC 0x%x IL %u ELR %s vector 0x%lx\n", what, esr_class(seen.esr),
	       (u32)((seen.esr & ESR_IL) != 0), ok(seen.elr == elr), seen.vector);
}

static void undef_test(void)
{
	u32 before = seen.count;
	u64 v = arch_read_impdef();

	report_undef("s3_1_c15_c2_0", before, v, (u64)arch_read_impdef_insn);
	before = seen.count;
	v = arch_read_unknown();
	report_undef("s3_2_c3_c0_0", before, v, (u64)arch_read_unknown_insn);
	before = seen.count;
	v = arch_read_cntp();
	report_undef("cntp_ctl_el0", before, v, (u64)arch_read_cntp_insn);
	printf("arch undef: done\n");
}

#define ID_READ(crm, op2) ({ u64 __v; __asm__ volatile("mrs %0, s3_0_c0_c" #crm "_" #op2 : "=r"(__v)); __v; })
#define ID_ROW(crm) (ID_READ(crm, 0) ^ ID_READ(crm, 1) ^ ID_READ(crm, 2) ^ ID_READ(crm, 3) ^ \
		     ID_READ(crm, 4) ^ ID_READ(crm, 5) ^ ID_READ(crm, 6) ^ ID_READ(crm, 7))

static void pmu_test(void)
{
	u64 dfr0 = read_sysreg(id_aa64dfr0_el1);
	u64 perfmon = (read_sysreg(id_dfr0_el1) >> 24) & 0xf;
	u32 before = seen.count;
	u64 v;

	printf("arch pmu: id_aa64dfr0_el1 0x%lx pmuver %lu pmsver %lu tracever %lu brps %lu wrps %lu\n", dfr0,
	       (dfr0 >> 8) & 0xf, (dfr0 >> 32) & 0xf, (dfr0 >> 4) & 0xf, ((dfr0 >> 12) & 0xf) + 1,
	       ((dfr0 >> 20) & 0xf) + 1);
	printf("arch pmu: id_dfr0_el1 perfmon %lu\n", perfmon);
	v = ID_ROW(1) ^ ID_ROW(2) ^ ID_ROW(3) ^ ID_ROW(4) ^ ID_ROW(5) ^ ID_ROW(6) ^ ID_ROW(7);
	printf("arch pmu: 56 id registers read, %u undefined (xor 0x%lx)\n", seen.count - before, v);
	before = seen.count;
	v = arch_read_pmcr();
	if (seen.count == before)
		printf("arch pmu: pmcr_el0 read 0x%lx\n", v);
	else
		printf("arch pmu: pmcr_el0 EC 0x%x\n", esr_class(seen.esr));
}

static void breakpoint(void)
{
	u32 before = seen.count;
	u64 ret;

	write_sysreg(dbgbvr0_el1, (u64)arch_bp_target);
	write_sysreg(dbgbcr0_el1, BCR_EL1_EL0 | CTRL_E);
	isb();
	ret = arch_bp_target();
	if (seen.count == before)
		printf("arch debug: breakpoint not taken, returned %lu\n", ret);
	else
		printf("arch debug: breakpoint EC 0x%x ELR %s, returned %lu\n", esr_class(seen.esr),
		       ok(seen.elr == (u64)arch_bp_target), ret);
}

static void single_step(void)
{
	u32 i;

	steps_left = STEPS;
	steps_taken = 0;
	/* With D clear, stepping would begin at once, here. */
	__asm__ volatile("msr daifset, #8" ::: "memory");
	write_sysreg(mdscr_el1, read_sysreg(mdscr_el1) | MDSCR_SS);
	isb();
	arch_step_run();
	printf("arch debug: %u steps EC 0x%x at", steps_taken, esr_class(seen.esr));
	for (i = 0; i < steps_taken && i < STEPS; i++)
		printf(" +%lu", step_elr[i] - (u64)arch_step_code);
	printf("\n");
}

static void watchpoint(void)
{
	u32 before = seen.count;

	write_sysreg(dbgwvr0_el1, (u64)&watched);
	write_sysreg(dbgwcr0_el1, WCR_STORE_8 | CTRL_E);
	isb();
	mmio_write64((u64)&watched, 7);
	if (seen.count == before)
		printf("arch debug: watchpoint not taken, stored %lu\n", watched);
	else
		printf("arch debug: watchpoint EC 0x%x FAR %s WnR %u, stored %lu\n", esr_class(seen.esr),
		       ok(seen.far == (u64)&watched), (u32)((seen.esr & ESR_WNR) != 0), watched);
}

/* Debug exceptions at EL1: the OS lock open, KDE and MDE set, D clear. */
static void debug_on(void)
{
	write_sysreg(oslar_el1, 0);
	write_sysreg(mdscr_el1, MDSCR_KDE | MDSCR_MDE);
	isb();
	__asm__ volatile("msr daifclr, #8" ::: "memory");
}

static void debug_off(void)
{
	__asm__ volatile("msr daifset, #8" ::: "memory");
	write_sysreg(mdscr_el1, 0);
	write_sysreg(dbgbcr0_el1, 0);
	write_sysreg(dbgwcr0_el1, 0);
	isb();
}

static void debug_test(void)
{
	u64 dfr0 = read_sysreg(id_aa64dfr0_el1);

	printf("arch debug: %lu breakpoints, %lu watchpoints\n", ((dfr0 >> 12) & 0xf) + 1, ((dfr0 >> 20) & 0xf) + 1);
	debug_on();
	breakpoint();
	single_step();
	watchpoint();
	debug_off();
	printf("arch debug: done\n");
}

/* Every breakpoint and watchpoint register and MDSCR_EL1, as read now. */
struct debug_regs {
	u64 bcr[MAX_PAIRS], bvr[MAX_PAIRS], wcr[MAX_PAIRS], wvr[MAX_PAIRS];
	u64 mdscr;
};

/* Pair n of control and value registers (ctl, val) to or from r->rc, r->rv. */
#define CASE_REGS(n, ctl, val, rc, rv)                                  \
	case n:                                                         \
		if (write) {                                            \
			write_sysreg(ctl##n##_el1, r->rc[n]);           \
			write_sysreg(val##n##_el1, r->rv[n]);           \
		} else {                                                \
			r->rc[n] = read_sysreg(ctl##n##_el1);           \
			r->rv[n] = read_sysreg(val##n##_el1);           \
		}                                                       \
		break;
#define CASE_PAIR(n) CASE_REGS(n, dbgbcr, dbgbvr, bcr, bvr)
#define CASE_WATCH(n) CASE_REGS(n, dbgwcr, dbgwvr, wcr, wvr)

/* One breakpoint's registers: each index is its own encoding. */
static void bp_access(struct debug_regs *r, u32 n, bool write)
{
	switch (n) {
	CASE_PAIR(0) CASE_PAIR(1) CASE_PAIR(2) CASE_PAIR(3) CASE_PAIR(4) CASE_PAIR(5) CASE_PAIR(6) CASE_PAIR(7)
	CASE_PAIR(8) CASE_PAIR(9) CASE_PAIR(10) CASE_PAIR(11) CASE_PAIR(12) CASE_PAIR(13) CASE_PAIR(14) CASE_PAIR(15)
	}
}

static void wp_access(struct debug_regs *r, u32 n, bool write)
{
	switch (n) {
	CASE_WATCH(0) CASE_WATCH(1) CASE_WATCH(2) CASE_WATCH(3) CASE_WATCH(4) CASE_WATCH(5) CASE_WATCH(6) CASE_WATCH(7)
	CASE_WATCH(8) CASE_WATCH(9) CASE_WATCH(10) CASE_WATCH(11) CASE_WATCH(12) CASE_WATCH(13) CASE_WATCH(14) CASE_WATCH(15)
	}
}

static void debug_regs(struct debug_regs *r, u32 bps, u32 wps, bool write)
{
	u32 n;

	for (n = 0; n < bps; n++)
		bp_access(r, n, write);
	for (n = 0; n < wps; n++)
		wp_access(r, n, write);
	if (write)
		write_sysreg(mdscr_el1, r->mdscr);
	else
		r->mdscr = read_sysreg(mdscr_el1);
	isb();
}

static bool regs_equal(const struct debug_regs *a, const struct debug_regs *b, u32 bps, u32 wps)
{
	u32 n;

	for (n = 0; n < bps; n++)
		if (a->bcr[n] != b->bcr[n] || a->bvr[n] != b->bvr[n])
			return false;
	for (n = 0; n < wps; n++)
		if (a->wcr[n] != b->wcr[n] || a->wvr[n] != b->wvr[n])
			return false;
	return a->mdscr == b->mdscr;
}

/*
 * Values of its own in every register, breakpoint 0 enabled on arch_probe
 * (the same address in every partition running this image), the others
 * disabled but holding a seed-dependent address.
 */
static void debug_keep_values(struct debug_regs *r, u32 bps, u32 wps, u64 seed)
{
	u64 base = 0x40000000ull + (seed << 16);
	u32 n;

	for (n = 0; n < bps; n++) {
		r->bvr[n] = base + n * 0x100;
		r->bcr[n] = BCR_EL1_EL0;
	}
	for (n = 0; n < wps; n++) {
		r->wvr[n] = base + 0x8000 + n * 8;
		r->wcr[n] = WCR_STORE_8;
	}
	r->bvr[0] = (u64)arch_probe;
	r->bcr[0] = BCR_EL1_EL0 | CTRL_E;
	r->mdscr = MDSCR_KDE | MDSCR_MDE;
}

static void debug_keep_test(const struct bootargs *a)
{
	static struct debug_regs start, want, now;
	u64 dfr0 = read_sysreg(id_aa64dfr0_el1);
	u32 bps = (u32)((dfr0 >> 12) & 0xf) + 1, wps = (u32)((dfr0 >> 20) & 0xf) + 1;
	u64 r, hits = 0, changed = 0;
	bool clean;

	debug_regs(&start, bps, wps, false);
	memset(&want, 0, sizeof(want));
	clean = regs_equal(&start, &want, bps, wps);
	write_sysreg(oslar_el1, 0);
	debug_keep_values(&want, bps, wps, a->arch_seed);
	debug_regs(&want, bps, wps, true);
	/* What the hardware keeps of the values (some bits read back fixed). */
	debug_regs(&want, bps, wps, false);
	__asm__ volatile("msr daifclr, #8" ::: "memory");
	for (r = 0; r < a->arch_rounds; r++) {
		u32 before = seen.count;
		u64 until = counter_now() + ms_to_counts(5);

		while ((s64)(counter_now() - until) < 0)
			;
		arch_probe();
		hits += seen.count != before && esr_class(seen.esr) == EC_BREAKPOINT_CUR;
		write_sysreg(dbgbcr0_el1, want.bcr[0]);
		isb();
		debug_regs(&now, bps, wps, false);
		changed += !regs_equal(&now, &want, bps, wps);
	}
	debug_off();
	printf("arch debug-keep: seed %lu, clean at start %s, %lu rounds, %lu breakpoint hits, %lu changed\n",
	       a->arch_seed, clean ? "yes" : "NO", a->arch_rounds, hits, changed);
}

u64 arch_try_store(u64 addr, u32 value)
{
	u64 vbar = read_sysreg(vbar_el1);
	u32 before = seen.count;

	write_sysreg(vbar_el1, (u64)arch_vectors);
	isb();
	arch_store(addr, value);
	write_sysreg(vbar_el1, vbar);
	isb();
	return seen.count != before ? seen.esr : 0;
}

void arch_test(const struct dt_info *dt, const struct bootargs *a)
{
	u64 vbar = read_sysreg(vbar_el1);

	write_sysreg(vbar_el1, (u64)arch_vectors);
	isb();
	if (a->arch == ARCH_ABORT)
		abort_test(dt);
	else if (a->arch == ARCH_UNDEF)
		undef_test();
	else if (a->arch == ARCH_PMU)
		pmu_test();
	else if (a->arch == ARCH_DEBUG)
		debug_test();
	else if (a->arch == ARCH_DEBUG_KEEP)
		debug_keep_test(a);
	write_sysreg(vbar_el1, vbar);
	isb();
}
