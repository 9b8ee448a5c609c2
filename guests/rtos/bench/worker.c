/*
 * The workers the benchmarks run their tasks on, and the period timing every
 * Thread-Metric test shares. A worker's stack is tied to its (priority,
 * slot), so a benchmark never needs more than it creates and a deleted
 * worker's stack is simply taken again by the next one created there.
 */
#include "rtos.h"
#include "bench.h"

#define WORKER_STACK	4096
/* A job still running this many ticks after the stop is stuck, not slow. */
#define STOP_TICKS	200
/* One per priority 1..31, and tm1's four extras at TM_COOP_PRIO. */
#define NWORKERS	(RTOS_PRIORITIES - 1 + TM_COOP_TASKS - 1)

struct worker {
	rtos_task_t task;
	rtos_sem_t go;
	job_fn job;
	unsigned int idx;
	volatile bool busy;
	bool created;
	uint8_t stack[WORKER_STACK] __attribute__((aligned(16)));
};

volatile bool bench_stop;
static struct worker workers[NWORKERS];
static uint64_t tick_counts;

static void worker_main(void *arg)
{
	struct worker *w = arg;

	for (;;) {
		rtos_sem_take(&w->go, RTOS_WAIT_FOREVER);
		w->job(w->idx);
		w->busy = false;
	}
}

struct worker *worker_get(uint32_t prio, unsigned int slot)
{
	struct worker *w;
	unsigned int i;

	if (prio < 1 || prio >= RTOS_PRIORITIES || slot >= TM_COOP_TASKS ||
	    (slot && prio != TM_COOP_PRIO))
		return NULL;
	i = slot ? RTOS_PRIORITIES - 1 + slot - 1 : prio - 1;
	w = &workers[i];
	if (w->created)
		return w;
	rtos_sem_init(&w->go, 0);
	if (rtos_task_create(&w->task, "worker", worker_main, w, prio,
			     w->stack, sizeof(w->stack)) != RTOS_OK)
		return NULL;
	w->created = true;
	return w;
}

void *worker_task(struct worker *w)
{
	return w->task;
}

void worker_release(struct worker *w)
{
	if (w && w->created) {
		rtos_task_delete(w->task);
		w->created = false;
	}
}

void workers_release_all(void)
{
	unsigned int i;

	for (i = 0; i < NWORKERS; i++)
		worker_release(&workers[i]);
}

void worker_start(struct worker *w, job_fn job, unsigned int idx)
{
	w->job = job;
	w->idx = idx;
	w->busy = true;
	rtos_sem_give(&w->go);
}

bool workers_stop(struct worker *const *ws, unsigned int n, void (*kick)(void))
{
	unsigned int i, busy = 0, tries;

	bench_stop = true;
	for (tries = 0; tries < STOP_TICKS; tries++) {
		busy = 0;
		for (i = 0; i < n; i++)
			busy += ws[i]->busy;
		if (!busy)
			break;
		if (kick)
			kick();
		rtos_sleep(1);
	}
	bench_stop = false;
	return !busy;
}

/*
 * Two tick edges give the tick length too; a period then ends on the first
 * tick at least half a tick short of its end, so that wake-up latency at
 * the start cannot push the end a whole tick late.
 */
uint64_t bench_align_tick(void)
{
	uint64_t t;

	rtos_sleep(1);
	t = rtos_counter();
	if (!tick_counts) {
		rtos_sleep(1);
		tick_counts = rtos_counter() - t;
		t += tick_counts;
	}
	return t;
}

void bench_wait_period(uint64_t start, uint32_t period_ms)
{
	uint64_t want = bench_ms_to_counts(period_ms, rtos_counter_hz());
	uint64_t slack = tick_counts / 2;

	want = want > slack ? want - slack : 0;
	while (rtos_counter() - start < want)
		rtos_sleep(1);
}
