/*
 * Architecture conformance (arch=...): what a bare-metal guest may expect
 * of the machine, whatever runs below it.
 *
 * - ptimer: the EL1 physical timer (CNTP_*) works and raises its own PPI
 *   through the GIC, never before its deadline, with ISTATUS set, and only
 *   for this vCPU's own deadlines, whether the vCPU waits in WFI or spins.
 * - level: level-triggered interrupts keep level semantics. A line that
 *   rose and fell while its interrupt was disabled is not delivered once it
 *   is enabled; one assertion is one delivery; the pending registers show
 *   an asserted line. Checked on a PL031's match interrupt (an SPI) and on
 *   both EL1 timers (PPIs).
 *
 * Handlers only count and record; all printing happens here.
 */
#include "guest.h"
#include "console.h"
#include "gic.h"

#define CNT_ENABLE		1
#define CNT_ISTATUS		4
#define IRQ_PRIORITY		0x80
/*
 * How long an interrupt that must come is waited for: a busy host can hold
 * back QEMU's timers for seconds. A round that sleeps is woken by the
 * virtual timer then, so a vCPU nobody wakes at its physical deadline shows
 * up as rounds later than LATE_MS.
 */
#define FIRE_TIMEOUT_MS		5000
#define LATE_MS			50
/* Time for an interrupt that should not come to show up anyway. */
#define SETTLE_MS		10
#define RTC_ASSERTIONS		5

/* PL031 registers. A match value equal to the count raises the interrupt
 * at once; the line is RIS & IMSC until ICR clears it. */
#define RTC_DR			0x00
#define RTC_MR			0x04
#define RTC_IMSC		0x10
#define RTC_RIS			0x14
#define RTC_ICR			0x1c

static u32 ptimer_intid, vtimer_intid, rtc_intid;
static u64 rtc;
/* Interrupts that reach conformance_irq only while a test wants them. */
static volatile u32 ptimer_on, vtimer_claimed;
static volatile u32 ptimer_taken, vtimer_taken, rtc_taken;

/* The ptimer rounds: the handler checks the one armed. */
static volatile u32 round_armed;
static volatile u32 rounds_fired, rounds_early, rounds_no_istatus, rounds_extra, rounds_late;
static volatile u64 rounds_late_max, late_limit;
/* A slow handler: it reads the device, works, and only then clears it. */
static u64 hold_counts;

static void ptimer_irq(u64 now)
{
	u64 ctl = read_sysreg(cntp_ctl_el0);
	u64 cval = read_sysreg(cntp_cval_el0);
	u64 held = counter_now() + hold_counts;

	while (hold_counts && (s64)(counter_now() - held) < 0)
		;
	/* Level-sensitive: the line must drop before the EOI. */
	write_sysreg(cntp_ctl_el0, 0);
	isb();
	ptimer_taken++;
	if (!round_armed) {
		rounds_extra++;
		return;
	}
	round_armed = 0;
	rounds_fired++;
	if (!(ctl & CNT_ISTATUS))
		rounds_no_istatus++;
	/* now is CNTVCT from the vector; CNTVOFF is 0, natively and under Partita. */
	if ((s64)(now - cval) < 0)
		rounds_early++;
	else if (now - cval > rounds_late_max)
		rounds_late_max = now - cval;
	if ((s64)(now - cval) > (s64)late_limit)
		rounds_late++;
}

bool conformance_irq(u32 intid, u64 now)
{
	if (ptimer_on && intid == ptimer_intid) {
		ptimer_irq(now);
	} else if (vtimer_claimed && intid == vtimer_intid) {
		write_sysreg(cntv_ctl_el0, 0);
		isb();
		vtimer_taken++;
	} else if (rtc_intid && intid == rtc_intid) {
		mmio_write32(rtc + RTC_ICR, 1);
		rtc_taken++;
	} else {
		return false;
	}
	return true;
}

static void timer_program(bool physical, u64 cval, u64 ctl)
{
	if (physical) {
		write_sysreg(cntp_cval_el0, cval);
		isb();
		write_sysreg(cntp_ctl_el0, ctl);
	} else {
		write_sysreg(cntv_cval_el0, cval);
		isb();
		write_sysreg(cntv_ctl_el0, ctl);
	}
	isb();
}

static void ppi_setup(u32 intid, bool on)
{
	gic_local_priority(intid, IRQ_PRIORITY);
	gic_local_level(intid);
	gic_local_enable(intid, on);
}

static bool before(u64 t)
{
	return (s64)(counter_now() - t) < 0;
}

/* Waits until *count has moved past `from`, or FIRE_TIMEOUT_MS. */
static void wait_past(volatile u32 *count, u32 from)
{
	u64 limit = counter_now() + ms_to_counts(FIRE_TIMEOUT_MS);

	while (*count == from && before(limit))
		;
}

/*
 * Sleeps in WFI until the round's interrupt came or `limit` passed. The
 * virtual timer, claimed here, wakes it at `limit` if the physical one
 * never fires.
 */
static void sleep_for_round(u64 limit)
{
	vtimer_claimed = 1;
	timer_program(false, limit, CNT_ENABLE);
	for (;;) {
		irq_mask();
		if (!round_armed || !before(limit)) {
			irq_unmask();
			break;
		}
		wfi();
		irq_unmask();
	}
	timer_program(false, 0, 0);
}

static u32 local_pending(u32 intid)
{
	return (gic_local_pending() >> intid) & 1;
}

/* Says what the timer looked like, for the first few rounds that missed. */
static void round_missed(u64 r)
{
	static u32 reported;
	u64 ctl = read_sysreg(cntp_ctl_el0);

	write_sysreg(cntp_ctl_el0, 0);
	isb();
	round_armed = 0;
	if (reported++ < 3)
		printf("ptimer: round %lu missed: ctl 0x%lx, %lu counts past cval, gic pending %u\n", r, ctl,
		       counter_now() - read_sysreg(cntp_cval_el0), local_pending(ptimer_intid));
}

/*
 * One round: CVAL in half the rounds, TVAL (which sets CVAL from the
 * counter) in the others; WFI in every other round, a spin otherwise.
 */
static void ptimer_round(u64 r, u64 delay)
{
	u64 limit;

	round_armed = 1;
	if (r % 4 < 2) {
		timer_program(true, counter_now() + delay, CNT_ENABLE);
	} else {
		write_sysreg(cntp_tval_el0, delay);
		isb();
		write_sysreg(cntp_ctl_el0, CNT_ENABLE);
		isb();
	}
	limit = read_sysreg(cntp_cval_el0) + ms_to_counts(FIRE_TIMEOUT_MS);
	if (r % 2 == 0)
		sleep_for_round(limit);
	while (round_armed && before(limit))
		;
	if (round_armed)
		round_missed(r);
}

static void ptimer_test(const struct bootargs *a)
{
	u64 delay = ms_to_counts(a->ptimer_ms), r;

	rounds_fired = rounds_early = rounds_no_istatus = rounds_extra = rounds_late = 0;
	rounds_late_max = 0;
	late_limit = ms_to_counts(LATE_MS);
	hold_counts = a->ptimer_hold_us * counter_freq() / 1000000;
	ptimer_on = 1;
	ppi_setup(ptimer_intid, true);
	ppi_setup(vtimer_intid, true);
	for (r = 0; r < a->ptimer_rounds; r++)
		ptimer_round(r, delay);
	/* A late extra interrupt still counts. */
	delay_ms(SETTLE_MS);
	gic_local_enable(vtimer_intid, false);
	vtimer_claimed = 0;
	printf("ptimer: ppi %u, %lu rounds of %lu ms: fired %u, early %u, without istatus %u, extra %u, "
	       "%u over %u ms late, late max %lu us\n", ptimer_intid, a->ptimer_rounds, a->ptimer_ms,
	       rounds_fired, rounds_early, rounds_no_istatus, rounds_extra, rounds_late, LATE_MS,
	       rounds_late_max * 1000000 / counter_freq());
}

/*
 * Disabled in the GIC, the timer's condition comes true and the timer is
 * then stopped: once enabled, nothing may come. Then, enabled, one armed
 * deadline gives one interrupt.
 */
static void level_timer(const char *name, u32 intid, bool physical, volatile u32 *taken)
{
	u32 high, low, stale, armed;

	ppi_setup(intid, false);
	timer_program(physical, counter_now(), CNT_ENABLE);
	delay_ms(SETTLE_MS);
	high = local_pending(intid);
	timer_program(physical, 0, 0);
	low = local_pending(intid);
	stale = *taken;
	gic_local_enable(intid, true);
	delay_ms(SETTLE_MS);
	stale = *taken - stale;

	armed = *taken;
	timer_program(physical, counter_now() + ms_to_counts(1), CNT_ENABLE);
	wait_past(taken, armed);
	delay_ms(SETTLE_MS);
	armed = *taken - armed;
	timer_program(physical, 0, 0);
	gic_local_enable(intid, false);
	printf("level: %s ppi %u disabled: pending while high %u, after stop %u; taken after enable %u; "
	       "armed: taken %u\n", name, intid, high, low, stale, armed);
}

/* The PL031's match interrupt asserts at once; a second tick in between is retried. */
static bool rtc_assert(void)
{
	u32 i;

	for (i = 0; i < 3; i++) {
		mmio_write32(rtc + RTC_MR, mmio_read32(rtc + RTC_DR));
		if (mmio_read32(rtc + RTC_RIS) & 1)
			return true;
	}
	return false;
}

/* The line rises and falls while the SPI is disabled: nothing once enabled. */
static void level_spi_disabled(void)
{
	u32 high, low, stale;

	gic_dist_set_bit(GICD_ICENABLER, rtc_intid);
	if (!rtc_assert()) {
		printf("level: spi %u: the rtc did not assert\n", rtc_intid);
		return;
	}
	delay_ms(SETTLE_MS);
	high = gic_dist_test_bit(GICD_ISPENDR, rtc_intid);
	mmio_write32(rtc + RTC_ICR, 1);
	low = gic_dist_test_bit(GICD_ISPENDR, rtc_intid);
	stale = rtc_taken;
	gic_dist_set_bit(GICD_ISENABLER, rtc_intid);
	delay_ms(SETTLE_MS);
	stale = rtc_taken - stale;
	printf("level: spi %u disabled: pending while high %u, after clear %u; taken after enable %u\n",
	       rtc_intid, high, low, stale);
}

/*
 * Enabled: each assertion waits a while with IRQs masked, then the handler
 * clears the device before its EOI, so each must be taken exactly once.
 */
static void level_spi_enabled(void)
{
	u32 k, asserted = 0, pending = 0, taken = rtc_taken;

	for (k = 0; k < RTC_ASSERTIONS; k++) {
		u32 from = rtc_taken;

		irq_mask();
		asserted += rtc_assert();
		delay_ms(SETTLE_MS / 2);
		pending += gic_dist_test_bit(GICD_ISPENDR, rtc_intid);
		irq_unmask();
		wait_past(&rtc_taken, from);
		delay_ms(SETTLE_MS);
	}
	printf("level: spi %u enabled: %u assertions, pending while masked %u, taken %u\n", rtc_intid,
	       asserted, pending, rtc_taken - taken);
}

static void level_test(void)
{
	if (!rtc || !rtc_intid) {
		printf("level: no arm,pl031 device with an spi: spi part skipped\n");
	} else {
		gic_spi_own(rtc_intid, IRQ_PRIORITY, current_mpidr_affinity());
		mmio_write32(rtc + RTC_ICR, 1);
		mmio_write32(rtc + RTC_IMSC, 1);
		level_spi_disabled();
		level_spi_enabled();
		mmio_write32(rtc + RTC_IMSC, 0);
		gic_dist_set_bit(GICD_ICENABLER, rtc_intid);
	}
	vtimer_claimed = 1;
	level_timer("vtimer", vtimer_intid, false, &vtimer_taken);
	vtimer_claimed = 0;
	ptimer_on = 1;
	level_timer("ptimer", ptimer_intid, true, &ptimer_taken);
	ptimer_on = 0;
}

void conformance_test(const struct dt_info *dt, const struct bootargs *a)
{
	ptimer_intid = dt->ptimer_intid;
	vtimer_intid = dt->vtimer_intid;
	rtc = dt->rtc;
	rtc_intid = dt->rtc_intid;
	if (a->arch == ARCH_PTIMER)
		ptimer_test(a);
	else if (a->arch == ARCH_LEVEL)
		level_test();
	ptimer_on = 0;
	gic_local_enable(ptimer_intid, false);
}
