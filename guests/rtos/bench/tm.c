/*
 * Thread-Metric tests 0-7, written from the suite's published description:
 * each test repeats one RTOS service (or a service and its dual) as fast as
 * it can, and its score is the events counted over one reporting period.
 * The controller, at priority 0, is the reporter.
 */
#include "rtos.h"
#include "bench.h"

/* Below the reporter, clear of tm2's chain and the cooperative tasks. */
#define TM_PRIO		10
#define TM2_BASE	1	/* tm2's chain: TM2_BASE (most urgent) .. +4 */
#define TM4_HIGH_PRIO	5
#define TM_SGI		3
#define TM_IRQ_PRIO	0x80
#define BASIC_WORDS	1024
#define MSG_WORDS	4	/* 16 bytes */
#define QUEUE_DEPTH	8
#define BLOCK_SIZE	128
#define POOL_BLOCKS	4

struct tm_test {
	unsigned int n;
	const char *name;
	void (*start)(void);
	void (*kick)(void);
	uint64_t (*events)(const char **fail);
};

static volatile uint64_t count[TM_COOP_TASKS];
static volatile uint64_t isr_count;
static const char *volatile fail;
static struct worker *ws[TM_COOP_TASKS];
static unsigned int nws;
static bool use_svc;

static rtos_sem_t sem;
static rtos_queue_t queue;
static uint32_t queue_buf[QUEUE_DEPTH * MSG_WORDS];
static rtos_pool_t pool;
static uint8_t pool_area[POOL_BLOCKS * BLOCK_SIZE] __attribute__((aligned(16)));
static uint32_t basic[BASIC_WORDS];

static void set_fail(const char *why)
{
	if (!fail)
		fail = why;
}

/* Borrows the worker and starts job on it; a missing slot fails the test. */
static void lend(uint32_t prio, unsigned int slot, job_fn job, unsigned int idx)
{
	struct worker *w = worker_get(prio, slot);

	if (!w) {
		set_fail("no task slot");
		return;
	}
	ws[nws++] = w;
	worker_start(w, job, idx);
}

/* Whether count[0..n) agree within slack; their sum goes to *sum. */
static bool agree(unsigned int n, uint64_t slack, uint64_t *sum)
{
	uint64_t lo = count[0], hi = count[0], c;
	unsigned int i;

	*sum = 0;
	for (i = 0; i < n; i++) {
		c = count[i];
		*sum += c;
		if (c < lo)
			lo = c;
		if (c > hi)
			hi = c;
	}
	return hi - lo <= slack;
}

static bool near(uint64_t a, uint64_t b)
{
	return a > b ? a - b <= 1 : b - a <= 1;
}

/* ---- 0: basic processing ---- */

/*
 * Each round adds i + round to word i and sums the array as it goes, so the
 * sum after a round is known from the one before: a check on memory and
 * arithmetic that the compiler cannot fold away.
 */
static void basic_job(unsigned int idx)
{
	uint32_t round = 0, expect = 0, sum, i;

	(void)idx;
	for (i = 0; i < BASIC_WORDS; i++) {
		basic[i] = i * 2654435761u;
		expect += basic[i];
	}
	while (!bench_stop) {
		round++;
		sum = 0;
		for (i = 0; i < BASIC_WORDS; i++) {
			basic[i] += i + round;
			sum += basic[i];
		}
		expect += BASIC_WORDS * (BASIC_WORDS - 1) / 2 + BASIC_WORDS * round;
		if (sum != expect)
			set_fail("array sum");
		count[0]++;
	}
}

static void basic_start(void)
{
	lend(TM_PRIO, 0, basic_job, 0);
}

static uint64_t single_events(const char **why)
{
	(void)why;
	return count[0];
}

/* ---- 1: cooperative scheduling ---- */

static void coop_job(unsigned int idx)
{
	while (!bench_stop) {
		count[idx]++;
		rtos_yield();
	}
}

static void coop_start(void)
{
	unsigned int i;

	for (i = 0; i < TM_COOP_TASKS; i++)
		lend(TM_COOP_PRIO, i, coop_job, i);
}

/* Thread-Metric's own check: the five counters agree within one. */
static uint64_t coop_events(const char **why)
{
	uint64_t sum;

	if (!agree(TM_COOP_TASKS, 1, &sum))
		*why = "counters differ by more than 1";
	return sum;
}

/* ---- 2: preemptive scheduling ---- */

/*
 * The least urgent task resumes the next one up, which resumes the next,
 * and so on; the most urgent counts and suspends, and each below it counts
 * and suspends in turn, back down to the least urgent.
 */
static void chain_job(unsigned int idx)
{
	if (idx == TM_COOP_TASKS - 1) {
		while (!bench_stop) {
			rtos_task_resume(worker_task(ws[idx - 1]));
			count[idx]++;
		}
		return;
	}
	for (;;) {
		rtos_task_suspend(rtos_task_self());
		if (bench_stop)
			return;
		if (idx > 0)
			rtos_task_resume(worker_task(ws[idx - 1]));
		count[idx]++;
	}
}

static void chain_start(void)
{
	unsigned int i;

	/* All workers first: the driver needs its neighbour's handle. */
	for (i = 0; i < TM_COOP_TASKS; i++)
		ws[nws++] = worker_get(TM2_BASE + i, 0);
	for (i = 0; i < TM_COOP_TASKS; i++) {
		if (!ws[i]) {
			nws = 0;
			set_fail("no task slot");
			return;
		}
	}
	for (i = 0; i < TM_COOP_TASKS; i++)
		worker_start(ws[i], chain_job, i);
}

static uint64_t chain_events(const char **why)
{
	uint64_t sum;

	if (!agree(TM_COOP_TASKS, 1, &sum))
		*why = "counters differ by more than 1";
	return sum;
}

/* Tasks left suspended mid-chain see bench_stop only once resumed. */
static void resume_all(void)
{
	unsigned int i;

	for (i = 0; i < nws; i++)
		rtos_task_resume(worker_task(ws[i]));
}

/* ---- 3 and 4: interrupt processing and interrupt preemption ---- */

static void interrupt_body(bool preempt)
{
	isr_count++;
	if (preempt)
		rtos_task_resume(worker_task(ws[1]));
	else
		rtos_sem_give(&sem);
}

static void irq3(uint32_t intid, void *arg)
{
	(void)intid;
	(void)arg;
	interrupt_body(false);
}

static void irq4(uint32_t intid, void *arg)
{
	(void)intid;
	(void)arg;
	interrupt_body(true);
}

static void svc3(void)
{
	interrupt_body(false);
}

static void svc4(void)
{
	interrupt_body(true);
}

/*
 * The SGI goes out through the GIC and comes back as a real interrupt; the
 * SVC is Thread-Metric's own software interrupt and never leaves the CPU.
 * The handler may be entered before either returns, so the compiler must
 * assume memory and the caller-saved registers changed.
 */
static void raise_interrupt(void)
{
	if (use_svc)
		__asm__ volatile("svc #0" ::: "x0", "x1", "x2", "x3", "x4", "x5", "x6",
				 "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
				 "x15", "x16", "x17", "x18", "x30", "cc", "memory");
	else
		rtos_sgi_self(TM_SGI);
}

static void interrupt_job(unsigned int idx)
{
	(void)idx;
	while (!bench_stop) {
		raise_interrupt();
		if (rtos_sem_take(&sem, RTOS_WAIT_FOREVER) != RTOS_OK)
			set_fail("semaphore take");
		count[0]++;
	}
}

static void interrupt_start(void)
{
	rtos_sem_init(&sem, 0);
	if (use_svc)
		rtos_svc_attach(svc3);
	else if (rtos_irq_attach(TM_SGI, TM_IRQ_PRIO, irq3, NULL) != RTOS_OK)
		set_fail("irq attach");
	lend(TM_PRIO, 0, interrupt_job, 0);
}

static uint64_t interrupt_events(const char **why)
{
	if (!near(isr_count, count[0]))
		*why = "interrupts and semaphore takes differ by more than 1";
	return count[0];
}

/* Slot 0 raises the interrupt; slot 1, more urgent, runs on each one. */
static void preempt_job(unsigned int idx)
{
	if (idx == 0) {
		while (!bench_stop) {
			raise_interrupt();
			count[0]++;
		}
		return;
	}
	for (;;) {
		rtos_task_suspend(rtos_task_self());
		if (bench_stop)
			return;
		count[1]++;
	}
}

static void preempt_start(void)
{
	struct worker *low = worker_get(TM_PRIO, 0), *high = worker_get(TM4_HIGH_PRIO, 0);

	if (!low || !high) {
		set_fail("no task slot");
		return;
	}
	ws[0] = low;
	ws[1] = high;
	nws = 2;
	if (use_svc)
		rtos_svc_attach(svc4);
	else if (rtos_irq_attach(TM_SGI, TM_IRQ_PRIO, irq4, NULL) != RTOS_OK)
		set_fail("irq attach");
	/* The urgent one runs first and is suspended before any interrupt. */
	worker_start(high, preempt_job, 1);
	worker_start(low, preempt_job, 0);
}

static uint64_t preempt_events(const char **why)
{
	if (!near(isr_count, count[1]))
		*why = "interrupts and preemptions differ by more than 1";
	else if (!near(count[0], count[1]))
		*why = "raises and preemptions differ by more than 1";
	return count[1];
}

static void resume_high(void)
{
	if (nws == 2)
		rtos_task_resume(worker_task(ws[1]));
}

/* ---- 5: message processing ---- */

static void message_job(unsigned int idx)
{
	uint32_t out[MSG_WORDS], in[MSG_WORDS], n = 0, i;

	(void)idx;
	while (!bench_stop) {
		n++;
		for (i = 0; i < MSG_WORDS; i++)
			out[i] = n * (2 * i + 1) ^ (0x5a5a5a5au >> i);
		if (rtos_queue_send(&queue, out, RTOS_NO_WAIT) != RTOS_OK)
			set_fail("queue send");
		if (rtos_queue_receive(&queue, in, RTOS_NO_WAIT) != RTOS_OK)
			set_fail("queue receive");
		for (i = 0; i < MSG_WORDS; i++)
			if (in[i] != out[i])
				set_fail("message content");
		count[0]++;
	}
}

static void message_start(void)
{
	if (rtos_queue_init(&queue, queue_buf, MSG_WORDS * 4, QUEUE_DEPTH) != RTOS_OK)
		set_fail("queue init");
	lend(TM_PRIO, 0, message_job, 0);
}

/* ---- 6: synchronization ---- */

static void sync_job(unsigned int idx)
{
	(void)idx;
	while (!bench_stop) {
		if (rtos_sem_take(&sem, RTOS_NO_WAIT) != RTOS_OK)
			set_fail("semaphore take");
		if (rtos_sem_give(&sem) != RTOS_OK)
			set_fail("semaphore give");
		count[0]++;
	}
}

static void sync_start(void)
{
	rtos_sem_init(&sem, 1);
	lend(TM_PRIO, 0, sync_job, 0);
}

/* ---- 7: memory allocation ---- */

static void memory_job(unsigned int idx)
{
	uint8_t *block;

	(void)idx;
	while (!bench_stop) {
		if (rtos_pool_alloc(&pool, (void **)&block, RTOS_NO_WAIT) != RTOS_OK) {
			set_fail("pool alloc");
		} else {
			if (block < pool_area || block + BLOCK_SIZE > pool_area + sizeof(pool_area))
				set_fail("block outside the pool");
			if (rtos_pool_free(&pool, block) != RTOS_OK)
				set_fail("pool free");
		}
		count[0]++;
	}
}

static void memory_start(void)
{
	if (rtos_pool_init(&pool, pool_area, BLOCK_SIZE, POOL_BLOCKS) != RTOS_OK)
		set_fail("pool init");
	lend(TM_PRIO, 0, memory_job, 0);
}

static void set(struct tm_test *t, unsigned int n, const char *name, void (*start)(void),
		void (*kick)(void), uint64_t (*events)(const char **why))
{
	t->n = n;
	t->name = name;
	t->start = start;
	t->kick = kick;
	t->events = events;
}

/* Filled in at run time: the image must hold no absolute addresses. */
static void describe(enum bench_id id, struct tm_test *t)
{
	switch (id) {
	case B_TM0:
		set(t, 0, "basic", basic_start, NULL, single_events);
		break;
	case B_TM1:
		set(t, 1, "cooperative", coop_start, NULL, coop_events);
		break;
	case B_TM2:
		set(t, 2, "preemptive", chain_start, resume_all, chain_events);
		break;
	case B_TM3:
		set(t, 3, "interrupt", interrupt_start, NULL, interrupt_events);
		break;
	case B_TM4:
		set(t, 4, "interrupt-preemption", preempt_start, resume_high, preempt_events);
		break;
	case B_TM5:
		set(t, 5, "message", message_start, NULL, single_events);
		break;
	case B_TM6:
		set(t, 6, "synchronization", sync_start, NULL, single_events);
		break;
	case B_TM3SVC:
		set(t, 3, "interrupt-svc", interrupt_start, NULL, interrupt_events);
		break;
	case B_TM4SVC:
		set(t, 4, "interrupt-preemption-svc", preempt_start, resume_high, preempt_events);
		break;
	default:
		set(t, 7, "memory", memory_start, NULL, single_events);
		break;
	}
}

void tm_run(enum bench_id id)
{
	struct tm_test test, *t = &test;
	const char *why = NULL;
	uint64_t start, events;
	unsigned int i;

	for (i = 0; i < TM_COOP_TASKS; i++)
		count[i] = 0;
	isr_count = 0;
	fail = NULL;
	nws = 0;
	use_svc = id == B_TM3SVC || id == B_TM4SVC;
	describe(id, t);

	start = bench_align_tick();
	t->start();
	bench_wait_period(start, bench_args.period_ms);
	events = t->events(&why);
	if (!workers_stop(ws, nws, t->kick))
		set_fail("tasks did not stop");
	if (use_svc)
		rtos_svc_attach(NULL);
	if (!why)
		why = fail;
	if (!why && events == 0)
		why = "no events";

	rtos_printf("tm %u %s: period %u ms events %lu check ", t->n, t->name,
		    bench_args.period_ms, (unsigned long)events);
	if (why)
		rtos_printf("FAIL: %s\n", why);
	else
		rtos_printf("ok\n");
}
