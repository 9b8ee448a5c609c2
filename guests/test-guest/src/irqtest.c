/*
 * The interrupt side of the guest: the C half of the IRQ vector, and the
 * tests that exercise SGIs, SPIs, priorities and the distributor's access
 * rules. Handlers only count and record; all printing happens in thread
 * context, one CPU at a time.
 */
#include "guest.h"
#include "console.h"
#include "gic.h"

/* SGI_PING (guest.h) goes from vCPU 0 to 1, SGI 2 back, SGI 3 hands vCPU 1 its turn. */
#define SGI_PONG		2
#define SGI_TURN		3
/* sgi-probe's SGI, from every register and with refused targets. */
#define SGI_PROBE		4
/* What a refused SGI is given to arrive anyway. */
#define REFUSED_WAIT_MS		20
#define LR_FIRST_SGI		8
#define LR_SGIS			8
/* Room for duplicates, so that a repeat shows up as one. */
#define LR_RECORD		(2 * LR_SGIS)
#define SPI_PRIORITY		0xa0
#define SPI_ROUNDS		5
/* Per interrupt: generous for a hypervisor that shares the core. */
#define WAIT_MS			100
/*
 * Per ping or pong: an SGI sent again while its last one is still pending
 * merges with it, so the sender waits out a host that keeps the receiver's
 * thread from running well past WAIT_MS. Only a lost SGI waits it all.
 */
#define SGI_WAIT_MS		1000

static u32 vtimer_intid;
static volatile u32 sgi_rx[MAX_CPUS][SGI_PONG + 1];
static volatile u32 sgi_turn[MAX_CPUS];
static volatile u32 gic_ready[MAX_CPUS];
static volatile u32 probe_rx[MAX_CPUS];
/* Every SGI (group 1, so the guest's) each vCPU took, for sgi-watch. */
static volatile u32 sgi_any[MAX_CPUS];
/* Set by vCPU 0 before it hands over the turn. */
static volatile u32 sgi_home;
static volatile u32 sgi_back_done;
static volatile u32 lr_taken[LR_RECORD];
static volatile u32 lr_count;
static volatile u32 spi_owned;
static volatile u32 spi_count;
/* Not printed: something to look at from a debugger. */
static volatile u32 unexpected;

void irq_handler(u64 now);

static void lr_record(u32 intid)
{
	u32 i = lr_count;

	if (i < LR_RECORD) {
		lr_taken[i] = intid;
		lr_count = i + 1;
	}
}

/* now: the counter as the vector read it, before anything else ran. */
void irq_handler(u64 now)
{
	for (;;) {
		u32 intid = gic_ack();
		u32 cpu = this_cpu();

		if (intid >= GIC_SPECIAL_INTID)
			break;
		if (intid < 16 && cpu < MAX_CPUS)
			sgi_any[cpu]++;
		if (conformance_irq(intid, now)) {
			/* Counted there; it may claim the virtual timer too. */
		} else if (intid == vtimer_intid)
			timer_irq(now);
		else if ((intid == SGI_PING || intid == SGI_PONG) && cpu < MAX_CPUS)
			sgi_rx[cpu][intid]++;
		else if (intid == SGI_TURN && cpu < MAX_CPUS)
			sgi_turn[cpu] = 1;
		else if (intid == SGI_PROBE && cpu < MAX_CPUS)
			probe_rx[cpu]++;
		else if (intid >= LR_FIRST_SGI && intid < LR_FIRST_SGI + LR_SGIS)
			lr_record(intid);
		else if (spi_owned && intid == spi_owned)
			spi_count++;
		else
			unexpected++;
		gic_eoi(intid);
		/* A second interrupt in the same entry was not waiting since the first. */
		now = counter_now();
	}
}

/* Polls (interrupts unmasked) until *v differs from old; false on timeout. */
static bool wait_change(volatile u32 *v, u32 old, u64 ms)
{
	u64 deadline = counter_now() + ms_to_counts(ms);

	while (*v == old)
		if ((s64)(counter_now() - deadline) >= 0)
			return false;
	return true;
}

/* Waits until *v reaches n, at most ms milliseconds. */
static bool wait_count(volatile u32 *v, u64 n, u64 ms)
{
	u64 deadline = counter_now() + ms_to_counts(ms);

	while (*v < n)
		if ((s64)(counter_now() - deadline) >= 0)
			return false;
	return true;
}

static bool gic_setup_failed(const char *why)
{
	printf("vcpu %u: gic: %s\n", this_cpu(), why);
	return false;
}

bool irq_setup_boot_cpu(const struct dt_info *dt, const struct bootargs *a)
{
	const char *why = "";

	vtimer_intid = dt->vtimer_intid;
	timer_setup(vtimer_intid);
	if (!gic_init_dist(&why) || !gic_init_cpu(&why))
		return gic_setup_failed(why);
	if (a->sgi)
		gic_local_enable(SGI_PONG, true);
	if (a->sgi_probe)
		gic_local_enable(SGI_PROBE, true);
	if (a->sgi_watch)
		for (u32 intid = 0; intid < 16; intid++)
			gic_local_enable(intid, true);
	gic_ready[this_cpu()] = 1;
	irq_unmask();
	return true;
}

bool irq_setup_secondary(const struct bootargs *a)
{
	const char *why = "";

	if (!gic_init_cpu(&why))
		return gic_setup_failed(why);
	if (a->sgi) {
		gic_local_enable(SGI_PING, true);
		gic_local_enable(SGI_TURN, true);
	}
	if (a->sgi_probe)
		gic_local_enable(SGI_PROBE, true);
	gic_ready[this_cpu()] = 1;
	return true;
}

/* For tests elsewhere: this vCPU takes SGI_PING (counted, see sgi_pings). */
bool irq_setup_ping_receiver(void)
{
	const char *why = "";

	if (!gic_init_cpu(&why))
		return gic_setup_failed(why);
	gic_local_enable(SGI_PING, true);
	gic_ready[this_cpu()] = 1;
	irq_unmask();
	return true;
}

u32 sgi_pings(u32 cpu)
{
	return cpu < MAX_CPUS ? sgi_rx[cpu][SGI_PING] : 0;
}

void sgi_ping(u64 aff)
{
	gic_send_sgi(aff, SGI_PING);
}

bool sgi_peer_ready(u32 cpu)
{
	return cpu < MAX_CPUS && gic_ready[cpu];
}

/*
 * The mask / check / wfi / unmask order closes the window where the awaited
 * interrupt arrives between the check and the wfi: a pending interrupt wakes
 * wfi even while masked, and is taken at the unmask.
 */
void idle_until(volatile u32 *flag)
{
	for (;;) {
		irq_mask();
		if (*flag) {
			irq_unmask();
			return;
		}
		wfi();
		irq_unmask();
	}
}

/* The SGI partner's half: wait for the turn, report, send its SGIs back. */
void irq_secondary_idle(const struct dt_info *dt, const struct bootargs *a)
{
	u32 me = this_cpu();
	u64 i;

	irq_unmask();
	if (a->sgi && me < MAX_CPUS) {
		idle_until(&sgi_turn[me]);
		printf("sgi: vcpu %u received %u\n", me, sgi_rx[me][SGI_PING]);
		for (i = 0; i < a->sgi; i++) {
			u32 before = sgi_rx[sgi_home][SGI_PONG];

			gic_send_sgi(dt->cpu_mpidr[sgi_home], SGI_PONG);
			wait_change(&sgi_rx[sgi_home][SGI_PONG], before, SGI_WAIT_MS);
		}
		dsb_sy();
		sgi_back_done = 1;
	}
	for (;;)
		wfi();
}

void sgi_test(const struct dt_info *dt, u64 n, u32 peer, bool peer_ready)
{
	u32 me = this_cpu();
	u64 i;

	if (!peer_ready) {
		printf("sgi: needs 2 vcpus with a working gic: skipped\n");
		return;
	}
	for (i = 0; i < n; i++) {
		u32 before = sgi_rx[peer][SGI_PING];

		gic_send_sgi(dt->cpu_mpidr[peer], SGI_PING);
		wait_change(&sgi_rx[peer][SGI_PING], before, SGI_WAIT_MS);
	}
	/* Tell the partner whom to answer, then wake it. */
	sgi_home = me;
	sgi_back_done = 0;
	gic_send_sgi(dt->cpu_mpidr[peer], SGI_TURN);
	/* It prints and then sends n SGIs, each waited for: allow all of that. */
	wait_change(&sgi_back_done, 0, (n + 10) * SGI_WAIT_MS);
	/*
	 * Its last SGI may still be on its way when it says it is done (its
	 * wait for each one is bounded, and a busy host can outlast it): one
	 * more bounded wait for the count, so only an SGI lost for good shows.
	 */
	wait_count(&sgi_rx[me][SGI_PONG], n, SGI_WAIT_MS);
	printf("sgi: sent %lu received %u\n", n, sgi_rx[me][SGI_PONG]);
}

/*
 * After sgi_test, with the same partner: SGI_PROBE from every register, to
 * this vCPU and to the partner by turns, each awaited; then values whose
 * targets or SGI the partition may not name, each given time to arrive
 * anyway. Only vCPUs 0 and 1 exist; a partition of direct-delivery cores
 * next door (sgi-watch) takes whatever reaches it.
 */
void sgi_probe(const struct dt_info *dt, u32 peer)
{
	static const struct {
		u64 value;
		u32 to_me;	/* SGI_PROBEs this vCPU must take from it */
	} refused[] = {
		{ (u64)SGI_PROBE << 24 | 0xfffc, 0 },		/* vCPUs 2-15 */
		{ (u64)SGI_PROBE << 24 | 1 << 16 | 0xffff, 0 },	/* Aff1 1 */
		{ (u64)SGI_PROBE << 24 | 1ull << 32 | 0xffff, 0 },	/* Aff2 1 */
		{ (u64)SGI_PROBE << 24 | 1ull << 44 | 0xffff, 0 },	/* RS 1: Aff0 16-31 */
		{ (u64)15 << 24 | 0x3, 0 },			/* Partita's SGI */
		{ (u64)SGI_PROBE << 24 | 0x9, 1 },		/* this vCPU 0, and a vCPU 3 */
	};
	u32 me = this_cpu(), reached = 0, kept = 0, held = 0;
	u64 rt, k;

	if (peer >= MAX_CPUS || me != 0) {
		printf("sgi-probe: needs vcpu 0 and a partner: skipped\n");
		return;
	}
	for (rt = 0; rt < 31; rt++) {
		u32 to = rt & 1 ? peer : me;
		u32 before = probe_rx[to];

		kept += sgi1r_write_rt(gic_sgi1r(dt->cpu_mpidr[to], SGI_PROBE), rt) == 0;
		reached += wait_change(&probe_rx[to], before, WAIT_MS);
	}
	/* xzr: SGI 0 to nobody. */
	kept += sgi1r_write_rt(0, 31) == 0;
	for (k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
		u32 mine = sgi_any[me], theirs = sgi_any[peer], probes = probe_rx[me];
		u64 deadline;

		/* From x2 and x3 by turns: the registers a declined write gives back. */
		kept += sgi1r_write_rt(refused[k].value, 2 + (k & 1)) == 0;
		deadline = counter_now() + ms_to_counts(REFUSED_WAIT_MS);
		while ((s64)(counter_now() - deadline) < 0)
			;
		held += sgi_any[me] - mine == refused[k].to_me && probe_rx[me] - probes == refused[k].to_me &&
			sgi_any[peer] == theirs;
	}
	printf("sgi-probe: reached %u of 31, kept %u of %lu, refused %u of %lu\n", reached, kept,
	       32 + k, held, k);
}

u32 sgis_taken(u32 cpu)
{
	return cpu < MAX_CPUS ? sgi_any[cpu] : 0;
}

static u8 lr_priority(u32 k)
{
	return (u8)(0x80 - ((k * 3) % LR_SGIS) * 0x10);
}

/*
 * Eight interrupts pending at once is more than a virtual CPU interface's
 * list registers hold (QEMU has 4), so a hypervisor must keep the rest and
 * still deliver all of them by priority, not by INTID.
 */
void lr_overflow_test(void)
{
	u64 self = current_mpidr_affinity();
	u32 k, i, missing = 0, want = 0xffu << LR_FIRST_SGI;
	bool in_order = true;
	u64 deadline;

	irq_mask();
	lr_count = 0;
	for (k = 0; k < LR_SGIS; k++) {
		gic_local_priority(LR_FIRST_SGI + k, lr_priority(k));
		gic_local_enable(LR_FIRST_SGI + k, true);
	}
	for (k = 0; k < LR_SGIS; k++)
		gic_send_sgi(self, LR_FIRST_SGI + k);
	/* SGI delivery is asynchronous: let all eight arrive before the unmask. */
	deadline = counter_now() + ms_to_counts(WAIT_MS);
	while ((gic_local_pending() & want) != want && (s64)(counter_now() - deadline) < 0)
		;
	irq_unmask();
	deadline = counter_now() + ms_to_counts(WAIT_MS);
	while (lr_count < LR_SGIS && (s64)(counter_now() - deadline) < 0)
		;
	for (k = 0; k < LR_SGIS; k++)
		gic_local_enable(LR_FIRST_SGI + k, false);

	printf("lr overflow: taken");
	for (i = 0; i < lr_count; i++)
		printf(" %u", lr_taken[i]);
	printf("\n");
	for (k = 0; k < LR_SGIS; k++) {
		u32 seen = 0;

		for (i = 0; i < lr_count; i++)
			seen += lr_taken[i] == LR_FIRST_SGI + k;
		missing += seen == 0;
		in_order &= seen <= 1;
	}
	for (i = 1; i < lr_count; i++)
		in_order &= lr_priority(lr_taken[i - 1] - LR_FIRST_SGI) <
			    lr_priority(lr_taken[i] - LR_FIRST_SGI);
	if (missing)
		printf("lr overflow: MISSING %u\n", missing);
	else if (!in_order || lr_count != LR_SGIS)
		printf("lr overflow: WRONG ORDER\n");
	else
		printf("lr overflow: ok\n");
}

void spi_test(u32 intid)
{
	u32 limit = gic_intid_limit(), k, taken = 0;

	if (intid >= limit) {
		printf("spi %u: beyond the distributor's %u interrupts: skipped\n", intid, limit);
		return;
	}
	spi_count = 0;
	spi_owned = intid;
	gic_spi_own(intid, SPI_PRIORITY, current_mpidr_affinity());
	for (k = 0; k < SPI_ROUNDS; k++) {
		u32 before = spi_count;

		gic_dist_set_bit(GICD_ISPENDR, intid);
		taken += wait_change(&spi_count, before, WAIT_MS);
	}
	printf("spi %u: taken %u of %u\n", intid, taken, SPI_ROUNDS);
	printf("spi %u: enabled %u priority 0x%x\n", intid,
	       gic_dist_test_bit(GICD_ISENABLER, intid), gic_dist_priority(intid));
}

/*
 * The same counting for an SPI another test owns (a doorbell): routed here,
 * enabled, and counted by the handler like spi_test's.
 */
void irq_watch_spi(u32 intid)
{
	spi_count = 0;
	spi_owned = intid;
	gic_spi_own(intid, SPI_PRIORITY, current_mpidr_affinity());
}

u32 irq_spi_taken(void)
{
	return spi_count;
}

/*
 * Everything a partition could do to someone else's interrupt through the
 * distributor. Natively it just happens; a hypervisor must ignore it.
 */
void gicd_attack(u32 intid)
{
	if (!gic_present()) {
		printf("gicd attack: no GIC node: skipped\n");
		return;
	}
	gic_dist_set_bit(GICD_ICENABLER, intid);
	gic_dist_set_priority(intid, 0x00);
	gic_dist_set_bit(GICD_ICPENDR, intid);
	gic_dist_set_bit(GICD_ISPENDR, intid);
	printf("gicd attack on %u done\n", intid);
}

/*
 * On a direct-delivery core the guest owns its CPU interface's group 1;
 * this reaches for what stays Partita's: the priority mask, group 0's
 * enable, Partita's kick SGI (15) and timer PPI (26) in its redistributor,
 * and SGIs 15 of both groups to every other core. Then it masks every
 * exception class, FIQ included, and leaves spinning to mask-spin.
 */
void cpuif_attack(void)
{
	const char *why;

	if (!gic_present() || !gic_init_cpu(&why)) {
		printf("cpuif attack: no GIC: skipped\n");
		return;
	}
	gic_priority_mask(0);
	gic_group0_disable();
	gic_local_enable(15, false);
	gic_local_enable(26, false);
	gic_local_priority(15, 0);
	gic_local_priority(26, 0);
	gic_sgi_all_others_both_groups(15);
	__asm__ volatile("msr daifset, #0xf");
	printf("cpuif attack done\n");
}

/*
 * A guest that masks interrupts and never idles: the hypervisor must still
 * take the core back for a more critical partition. The previous mask is
 * restored, since the GIC (and so the unmask) is only set up on request.
 */
void mask_spin(u64 ms)
{
	u64 daif = read_sysreg(daif);
	u64 deadline;

	irq_mask();
	deadline = counter_now() + ms_to_counts(ms);
	while ((s64)(counter_now() - deadline) < 0)
		;
	write_sysreg(daif, daif);
	printf("mask spin done\n");
}
