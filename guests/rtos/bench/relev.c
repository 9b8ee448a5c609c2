/*
 * Ker-ONE's task release latency (relEv, its section 6 and Figure 14): from
 * the tick's timer event to the first instruction of the task that tick
 * released, through the interrupt, the tick handler, the scheduler and the
 * switch. The controller, the most urgent task, sleeps one tick at a time;
 * each time it runs again it takes the counter minus the compare value of
 * the tick that woke it. Nothing else is ready meanwhile, so natively the
 * idle task waits in WFI, and under Partita the pCPU is free for whatever
 * shares it: a release then includes Partita bringing the RTOS back.
 */
#include "rtos.h"
#include "bench.h"

/* The first releases run code QEMU has yet to translate, a cost no hardware has. */
#define WARMUP		4
/*
 * Bucket b counts latencies of b significant bits (0; 1; 2-3; 4-7; ...),
 * the last one everything longer too: no samples to keep, any spread.
 */
#define HIST_BUCKETS	24

static unsigned int bucket(uint64_t v)
{
	unsigned int b = v ? 64 - (unsigned int)__builtin_clzll(v) : 0;

	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

void relev_run(const struct bench_args *a)
{
	uint64_t min = UINT64_MAX, max = 0, sum = 0, due, woke, lat;
	uint32_t hist[HIST_BUCKETS], i, b, done = 0, late = 0;

	for (b = 0; b < HIST_BUCKETS; b++)
		hist[b] = 0;
	rtos_printf("relev: %u releases, tick %u Hz, cntfrq %lu\n", a->relev,
		    a->tick_hz ? a->tick_hz : RTOS_TICK_HZ_DEFAULT, (unsigned long)rtos_counter_hz());
	for (i = 0; i < WARMUP + a->relev; i++) {
		due = rtos_ticks() + 1;
		rtos_sleep(1);
		woke = rtos_counter();
		if (i < WARMUP)
			continue;
		/*
		 * Another tick since ours (the release took a period, or came
		 * just before the next deadline) leaves only the later tick's
		 * deadline to read: such a release is counted, not timed.
		 */
		if (rtos_ticks() != due) {
			late++;
			continue;
		}
		lat = woke - rtos_tick_deadline();
		min = lat < min ? lat : min;
		max = lat > max ? lat : max;
		sum += lat;
		hist[bucket(lat)]++;
		done++;
	}
	if (!done) {
		rtos_printf("relev: n 0, %u late\n", late);
		return;
	}
	rtos_printf("relev: n %u min %lu mean %lu max %lu counts\n", done, (unsigned long)min,
		    (unsigned long)(sum / done), (unsigned long)max);
	if (late)
		rtos_printf("relev: %u late\n", late);
	/* One call per number: the kernel's printf takes no array. */
	rtos_printf("relev hist:");
	for (b = 0; b < HIST_BUCKETS; b++)
		rtos_printf(" %u", hist[b]);
	rtos_printf("\n");
}
