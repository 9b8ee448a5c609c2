/*
 * The seL4-style probe of scheduler cost against priority: how long it
 * takes a task to wake a more urgent one at priority p and have it running,
 * for every p a woken task can have. A linear ready queue scans the levels
 * above p first, so its cost should grow with p; the bitmap's should not.
 *
 * The waker sits at the least urgent level so that every other level can be
 * woken; p = 0 is the controller itself, blocked like any other woken task.
 */
#include "rtos.h"
#include "bench.h"

#define WAKER_PRIO	(RTOS_PRIORITIES - 1)
/* Warm the caches and branch predictors first, as seL4's benchmark did. */
#define WARMUP		16
#define SAMPLES		50

static rtos_sem_t go, done;
static volatile uint64_t woken_at;
static uint64_t samples[SAMPLES];

/* The woken side: stamps the counter as soon as it runs again. */
static void woken_loop(void)
{
	unsigned int i;

	for (i = 0; i < WARMUP + SAMPLES; i++) {
		rtos_sem_take(&go, RTOS_WAIT_FOREVER);
		woken_at = rtos_counter();
	}
}

static void woken_job(unsigned int idx)
{
	(void)idx;
	woken_loop();
}

/*
 * The give switches to the woken task before it returns. The last give, of
 * done, lets the controller hand this worker its next job before this one
 * has returned; that is harmless, as the semaphore keeps the job waiting.
 */
static void waker_job(unsigned int idx)
{
	uint64_t t0;
	unsigned int i;

	(void)idx;
	for (i = 0; i < WARMUP + SAMPLES; i++) {
		t0 = rtos_counter();
		rtos_sem_give(&go);
		if (i >= WARMUP)
			samples[i - WARMUP] = woken_at - t0;
	}
	rtos_sem_give(&done);
}

void schedprio_run(bool linear)
{
	struct worker *waker = worker_get(WAKER_PRIO, 0), *woken = NULL;
	const char *label = linear ? "linear" : "bitmap";
	uint32_t p;

	if (!waker) {
		rtos_printf("note: schedprio: no task slot for the waker\n");
		return;
	}
	for (p = 0; p < WAKER_PRIO; p++) {
		rtos_sem_init(&go, 0);
		rtos_sem_init(&done, 0);
		if (p > 0) {
			woken = worker_get(p, 0);
			if (!woken) {
				rtos_printf("note: schedprio: no task slot for prio %u\n", p);
				continue;
			}
			/* More urgent, so it is waiting on go before the waker starts. */
			worker_start(woken, woken_job, 0);
			worker_start(waker, waker_job, 0);
		} else {
			worker_start(waker, waker_job, 0);
			woken_loop();
		}
		rtos_sem_take(&done, RTOS_WAIT_FOREVER);
		if (p > 0)
			worker_release(woken);
		rtos_printf("schedprio %s: prio %u switch %lu counts\n", label, p,
			    (unsigned long)median_u64(samples, SAMPLES));
	}
}
