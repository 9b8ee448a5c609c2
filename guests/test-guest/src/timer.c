/*
 * The EL1 virtual timer as an interrupt source: a periodic phase that counts
 * lost ticks, and a one-shot latency probe. Only CNTV_* and CNTVCT are used;
 * the physical timer belongs to whoever runs below us.
 */
#include "guest.h"
#include "console.h"
#include "gic.h"

#define CNTV_CTL_ENABLE		1
#define TIMER_PRIORITY		0x80
#define BENCH_DELAY_SPAN	1001	/* delays of irq-bench-delay (200) + 0..1000 ticks */
#define BENCH_TIMEOUT_MS	100
#define HIST_BUCKETS		16

enum timer_mode { TIMER_IDLE = 0, TIMER_PERIODIC, TIMER_BENCH, TIMER_WAKE };

struct latency {
	u64 min, max, sum, count;
};

static u32 intid;
static volatile enum timer_mode mode;

/* Periodic phase: deadline k is start + k * cntfrq / hz, kept exact in integers. */
static u64 period, period_frac, hz;
static u64 frac_acc;
static u64 ticks_wanted;
static volatile u64 ticks_taken, ticks_late;
static volatile u32 periodic_done;
static struct latency periodic_lat;

/* One-shot probe. */
static volatile u32 bench_fired;
static volatile u64 bench_latency;
static u32 bench_samples[IRQ_BENCH_MAX];

static void latency_reset(struct latency *l)
{
	l->min = ~0ull;
	l->max = 0;
	l->sum = 0;
	l->count = 0;
}

static void latency_add(struct latency *l, u64 v)
{
	if (v < l->min)
		l->min = v;
	if (v > l->max)
		l->max = v;
	l->sum += v;
	l->count++;
}

static void timer_off(void)
{
	write_sysreg(cntv_ctl_el0, 0);
	isb();
}

/* CVAL first: enabling with a stale compare value would fire at once. */
static void timer_arm(u64 cval)
{
	write_sysreg(cntv_cval_el0, cval);
	isb();
	write_sysreg(cntv_ctl_el0, CNTV_CTL_ENABLE);
	isb();
}

void timer_setup(u32 vtimer_intid)
{
	intid = vtimer_intid;
}

static void periodic_tick(u64 now, u64 cval)
{
	u64 next = cval + period;

	latency_add(&periodic_lat, (s64)(now - cval) > 0 ? now - cval : 0);
	frac_acc += period_frac;
	if (frac_acc >= hz) {
		frac_acc -= hz;
		next++;
	}
	/* Already past the next deadline: that one can no longer be on time. */
	if ((s64)(now - next) >= 0)
		ticks_late++;
	ticks_taken++;
	if (ticks_taken >= ticks_wanted) {
		timer_off();
		periodic_done = 1;
		return;
	}
	/* Absolute: however late this handler ran, the rhythm does not drift. */
	write_sysreg(cntv_cval_el0, next);
	isb();
}

/* The timer is level-sensitive: every path must move CVAL or switch it off before the EOI. */
void timer_irq(u64 now)
{
	u64 cval = read_sysreg(cntv_cval_el0);

	if (mode == TIMER_PERIODIC) {
		periodic_tick(now, cval);
	} else if (mode == TIMER_WAKE) {
		timer_off();
		bench_fired = 1;
	} else if (mode == TIMER_BENCH) {
		timer_off();
		bench_latency = (s64)(now - cval) > 0 ? now - cval : 0;
		bench_fired = 1;
	} else {
		timer_off();
	}
}

static void timer_irq_enable(bool on)
{
	if (on) {
		gic_local_priority(intid, TIMER_PRIORITY);
		gic_local_level(intid);
	}
	gic_local_enable(intid, on);
}

void timer_periodic_test(u64 f, u64 n)
{
	u64 freq = counter_freq();

	if (f > freq) {
		printf("timer: timer_hz %lu is above cntfrq %lu: skipped\n", f, freq);
		return;
	}
	hz = f;
	period = freq / f;
	period_frac = freq % f;
	frac_acc = 0;
	ticks_wanted = n;
	ticks_taken = 0;
	ticks_late = 0;
	periodic_done = 0;
	latency_reset(&periodic_lat);
	mode = TIMER_PERIODIC;
	timer_irq_enable(true);
	timer_arm(counter_now() + period);

	/*
	 * wfi, not a spin: on a core shared under a hypervisor, this is what
	 * lets the other vCPU run. The mask around the check keeps the last
	 * tick from slipping in between the check and the wfi.
	 */
	idle_until(&periodic_done);
	mode = TIMER_IDLE;
	timer_irq_enable(false);

	printf("timer: %lu ticks at %lu Hz, %lu late\n", ticks_taken, f, ticks_late);
	printf("timer latency: min %lu mean %lu max %lu counts (cntfrq %lu)\n",
	       periodic_lat.min, periodic_lat.sum / periodic_lat.count, periodic_lat.max, freq);
}

/* A fixed-seed LCG (Knuth's MMIX constants): the same delays every run. */
static u64 lcg_next(u64 *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return *state >> 33;
}

/*
 * Spins rather than idles while waiting, so a sample measures the delivery
 * of the interrupt, not the wake-up of a halted core. With `wait` it idles
 * in WFI instead: on a shared core the other vCPU runs meanwhile, and a
 * sample measures the preemption that brings this one back for its timer.
 */
void irq_bench(u64 n, bool wait, u64 delay)
{
	struct latency lat;
	u64 seed = 0x5eed, i, missed = 0, width;
	u32 hist[HIST_BUCKETS], b;

	latency_reset(&lat);
	mode = TIMER_BENCH;
	timer_irq_enable(true);
	for (i = 0; i < n; i++) {
		u64 cval = counter_now() + delay + lcg_next(&seed) % BENCH_DELAY_SPAN;
		u64 deadline = cval + ms_to_counts(BENCH_TIMEOUT_MS);

		bench_fired = 0;
		timer_arm(cval);
		if (wait)
			idle_until(&bench_fired);
		while (!bench_fired && (s64)(counter_now() - deadline) < 0)
			;
		if (!bench_fired) {
			timer_off();
			missed++;
			continue;
		}
		bench_samples[lat.count] = (u32)(bench_latency > 0xffffffffull ? 0xffffffffull
							: bench_latency);
		latency_add(&lat, bench_latency);
	}
	mode = TIMER_IDLE;
	timer_irq_enable(false);

	if (lat.count == 0) {
		printf("irq-bench: n 0, %lu missed\n", missed);
		return;
	}
	width = (lat.max - lat.min + HIST_BUCKETS - 1) / HIST_BUCKETS;
	if (width == 0)
		width = 1;
	for (b = 0; b < HIST_BUCKETS; b++)
		hist[b] = 0;
	for (i = 0; i < lat.count; i++) {
		u64 k = (bench_samples[i] - lat.min) / width;

		hist[k < HIST_BUCKETS ? k : HIST_BUCKETS - 1]++;
	}
	printf("irq-bench: n %lu min %lu mean %lu max %lu counts\n",
	       lat.count, lat.min, lat.sum / lat.count, lat.max);
	printf("irq-bench hist:");
	for (b = 0; b < HIST_BUCKETS; b++)
		printf(" %u", hist[b]);
	printf("\n");
	if (missed)
		printf("irq-bench: %lu missed\n", missed);
}

/*
 * Sleeps in WFI until counter value t: under -icount an idle vCPU lets time
 * run on, where a spinning one would hold it back for every other vCPU.
 */
void timer_sleep_until(u64 t)
{
	mode = TIMER_WAKE;
	timer_irq_enable(true);
	bench_fired = 0;
	timer_arm(t);
	idle_until(&bench_fired);
	mode = TIMER_IDLE;
	timer_irq_enable(false);
}

/*
 * duty: a critical task's rhythm. Each cycle sleeps until its period starts
 * (idle_us after the last one began), in WFI, then computes for busy_us: on
 * a shared pCPU, a less urgent vCPU gets the pCPU (or, if it may migrate,
 * leaves it) exactly that often. Periods are absolute, so a late wake-up
 * does not stretch the ones after it.
 */
void duty_test(u64 busy_us, u64 idle_us, u64 cycles)
{
	u64 period = us_to_counts(busy_us + idle_us);
	u64 start = counter_now();
	u64 first = start;
	u64 i;

	mode = TIMER_WAKE;
	timer_irq_enable(true);
	for (i = 0; i < cycles; i++) {
		u64 end;

		bench_fired = 0;
		timer_arm(start + us_to_counts(idle_us));
		idle_until(&bench_fired);
		end = start + period;
		while ((s64)(counter_now() - end) < 0)
			;
		start = end;
	}
	mode = TIMER_IDLE;
	timer_irq_enable(false);
	/* The counter's times let a test tell the cycles from the boot before them. */
	printf("duty: %lu cycles of %lu us busy after %lu us idle, from %lu us to %lu us\n", cycles, busy_us, idle_us,
	       counts_to_us(first), counts_to_us(start));
}
