/*
 * bench=selftest: the kernel checked from the inside, on the real GIC and
 * timer, natively or under Partita. A controller task runs one check after
 * another, creating helpers as each needs them; every check prints one line.
 */
#include "rtos.h"

#define CONTROLLER_PRIO	10
#define HIGH_PRIO	5
#define LOW_PRIO	15
#define HELPERS		6
#define STACK_SIZE	4096
#define SGI_WAKE	3
#define MSG_WORDS	4

static uint64_t controller_stack[STACK_SIZE / 8] __attribute__((aligned(16)));
static uint64_t helper_stack[HELPERS][STACK_SIZE / 8] __attribute__((aligned(16)));
static rtos_task_t helper[HELPERS];
static unsigned passed, failed;
static uint32_t tick_hz = RTOS_TICK_HZ_DEFAULT;

/* What the helpers report back: a log of who ran in which order. */
static volatile char trail[16];
static volatile unsigned trail_len;
static volatile unsigned counter[2];
static volatile bool stop;

static rtos_sem_t sem;
static rtos_queue_t queue;
static uint32_t queue_buf[4][MSG_WORDS];
static rtos_pool_t pool;
static uint64_t pool_area[4 * 3];

static void check(const char *name, bool ok)
{
	rtos_printf("selftest: %s %s\n", name, ok ? "ok" : "FAIL");
	if (ok)
		passed++;
	else
		failed++;
}

static void mark(char c)
{
	bool was = rtos_irq_disable();

	if (trail_len < sizeof(trail) - 1)
		trail[trail_len++] = c;
	trail[trail_len] = '\0';
	rtos_irq_restore(was);
}

static bool trail_is(const char *want)
{
	unsigned i;

	for (i = 0; want[i]; i++)
		if (i >= trail_len || trail[i] != want[i])
			return false;
	return i == trail_len;
}

static void trail_reset(void)
{
	trail_len = 0;
	trail[0] = '\0';
}

static bool spawn(unsigned slot, rtos_entry entry, void *arg, uint32_t prio)
{
	return rtos_task_create(&helper[slot], "helper", entry, arg, prio, helper_stack[slot],
				STACK_SIZE) == RTOS_OK;
}

/*
 * The sentinel runs below every helper, so once it gets the CPU no helper
 * can run any further: each has blocked, suspended itself or finished. That
 * makes "let the helpers run" independent of timing (ticks may come late
 * under a loaded host or a hypervisor).
 */
static uint64_t sentinel_stack[STACK_SIZE / 8] __attribute__((aligned(16)));
static rtos_sem_t go, quiet;

static void sentinel(void *arg)
{
	(void)arg;
	for (;;) {
		rtos_sem_take(&go, RTOS_WAIT_FOREVER);
		rtos_sem_give(&quiet);
	}
}

static void settle(void)
{
	rtos_sem_give(&go);
	rtos_sem_take(&quiet, RTOS_WAIT_FOREVER);
}

/*
 * Ends the helpers still there. A finished helper's slot may since have gone
 * to another helper (deleted here anyway) or be free (EINVAL, harmless).
 */
static void reap(void)
{
	unsigned i;

	settle();
	for (i = 0; i < HELPERS; i++) {
		rtos_task_delete(helper[i]);
		helper[i] = NULL;
	}
}

static void mark_task(void *arg)
{
	mark((char)(uintptr_t)arg);
}

/* Creating a more urgent task runs it at once; a less urgent one waits. */
static void test_preempt(void)
{
	bool ok;

	trail_reset();
	ok = spawn(0, mark_task, (void *)'L', LOW_PRIO);
	ok &= spawn(1, mark_task, (void *)'H', HIGH_PRIO);
	mark('C');
	settle();
	check("preempt", ok && trail_is("HCL"));
	reap();
}

static void suspender(void *arg)
{
	(void)arg;
	for (;;) {
		counter[0]++;
		rtos_task_suspend(rtos_task_self());
	}
}

static void test_suspend(void)
{
	bool ok;

	counter[0] = 0;
	ok = spawn(0, suspender, NULL, HIGH_PRIO) && counter[0] == 1;
	ok &= rtos_task_resume(helper[0]) == RTOS_OK && counter[0] == 2;
	ok &= rtos_task_resume(helper[0]) == RTOS_OK && counter[0] == 3;
	ok &= rtos_task_resume(rtos_task_self()) == RTOS_ESTATE;
	ok &= rtos_task_create(&helper[2], "twin", suspender, NULL, HIGH_PRIO, helper_stack[0],
			       STACK_SIZE) == RTOS_EINVAL;
	ok &= rtos_task_suspend(NULL) == RTOS_EINVAL;
	reap();
	check("suspend-resume", ok);
}

static void yielder(void *arg)
{
	(void)arg;
	mark('Y');
}

static void test_yield(void)
{
	bool ok;

	trail_reset();
	ok = spawn(0, yielder, NULL, CONTROLLER_PRIO);
	mark('C');
	rtos_yield();
	mark('C');
	check("yield", ok && trail_is("CYC"));
	reap();
}

/* Each spinner counts the times it takes over from the other one. */
static volatile unsigned last_spinner;

static void spinner(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;

	while (!stop) {
		if (last_spinner != me) {
			last_spinner = me;
			counter[me]++;
		}
	}
}

static void test_round_robin(void)
{
	bool ok;
	unsigned turns;

	stop = false;
	last_spinner = 2;
	counter[0] = counter[1] = 0;
	ok = spawn(0, spinner, (void *)0, LOW_PRIO) && spawn(1, spinner, (void *)1, LOW_PRIO);
	rtos_sleep(20);
	stop = true;
	settle();
	turns = counter[0] + counter[1];
	/* A handover on every tick: about 20, never many more. */
	ok &= counter[0] >= 5 && counter[1] >= 5 && turns <= 25;
	check("round-robin", ok);
	if (!ok)
		rtos_printf("selftest: round-robin turns %u + %u\n", counter[0], counter[1]);
	reap();
}

/*
 * Exactly n ticks, and ticks at the right rate: a quarter of a second of
 * them within 20 ms of counter time (the latency of the first and the last
 * tick is all that may differ).
 */
static void test_sleep(void)
{
	uint64_t hz = rtos_counter_hz(), n = tick_hz / 4 ? tick_hz / 4 : 1;
	uint64_t want = n * hz / tick_hz, slack = hz / 50;
	uint64_t t0, t1, c0, c1;
	bool ok;

	rtos_sleep(1);
	t0 = rtos_ticks();
	rtos_sleep(10);
	ok = rtos_ticks() - t0 == 10;
	t0 = rtos_ticks();
	c0 = rtos_counter();
	rtos_sleep((uint32_t)n);
	c1 = rtos_counter();
	t1 = rtos_ticks();
	ok &= t1 - t0 == n && c1 - c0 + slack >= want && c1 - c0 <= want + slack;
	check("sleep", ok);
}

/*
 * A tick's deadline is a period (a count more when the remainder carries)
 * after the one before, and the task it wakes runs after it. Ticks are
 * counted rather than assumed one, as a slow host may have handled two.
 */
static void test_tick_deadline(void)
{
	uint64_t period = rtos_counter_hz() / tick_hz, t0, t1, d0, d1, c1;
	bool ok;

	rtos_sleep(1);
	t0 = rtos_ticks();
	d0 = rtos_tick_deadline();
	rtos_sleep(1);
	c1 = rtos_counter();
	t1 = rtos_ticks();
	d1 = rtos_tick_deadline();
	ok = d0 != 0 && c1 >= d1 && d1 - d0 >= (t1 - t0) * period && d1 - d0 <= (t1 - t0) * (period + 1);
	check("tick-deadline", ok);
}

static void sem_waiter(void *arg)
{
	if (rtos_sem_take(&sem, RTOS_WAIT_FOREVER) == RTOS_OK)
		mark((char)(uintptr_t)arg);
}

/* Counting, both failures, then two waiters woken most urgent first. */
static void test_sem(void)
{
	uint64_t t0;
	bool ok;

	ok = rtos_sem_init(&sem, 2) == RTOS_OK;
	ok &= rtos_sem_take(&sem, RTOS_NO_WAIT) == RTOS_OK;
	ok &= rtos_sem_take(&sem, RTOS_NO_WAIT) == RTOS_OK;
	ok &= rtos_sem_take(&sem, RTOS_NO_WAIT) == RTOS_EEMPTY;
	t0 = rtos_ticks();
	ok &= rtos_sem_take(&sem, 5) == RTOS_ETIMEOUT && rtos_ticks() - t0 == 5;
	trail_reset();
	ok &= spawn(0, sem_waiter, (void *)'a', LOW_PRIO + 1);
	ok &= spawn(1, sem_waiter, (void *)'b', LOW_PRIO);
	settle();
	ok &= trail_is("");
	ok &= rtos_sem_give(&sem) == RTOS_OK && rtos_sem_give(&sem) == RTOS_OK;
	settle();
	ok &= trail_is("ba") && sem.count == 0;
	ok &= rtos_sem_give(&sem) == RTOS_OK && sem.count == 1;
	check("semaphore", ok);
	reap();
}

static void fill_msg(uint32_t *m, uint32_t v)
{
	unsigned i;

	for (i = 0; i < MSG_WORDS; i++)
		m[i] = v * 16 + i;
}

static bool msg_is(const uint32_t *m, uint32_t v)
{
	unsigned i;

	for (i = 0; i < MSG_WORDS; i++)
		if (m[i] != v * 16 + i)
			return false;
	return true;
}

static void queue_receiver(void *arg)
{
	uint32_t m[MSG_WORDS];

	(void)arg;
	if (rtos_queue_receive(&queue, m, RTOS_WAIT_FOREVER) == RTOS_OK && msg_is(m, 7))
		mark('R');
}

static void queue_sender(void *arg)
{
	uint32_t m[MSG_WORDS];

	(void)arg;
	fill_msg(m, 9);
	if (rtos_queue_send(&queue, m, RTOS_WAIT_FOREVER) == RTOS_OK)
		mark('S');
}

/* Full and empty, wraparound, a waiting receiver and a waiting sender. */
static void test_queue(void)
{
	uint32_t m[MSG_WORDS], v;
	bool ok;

	ok = rtos_queue_init(&queue, queue_buf, sizeof(m), 4) == RTOS_OK;
	for (v = 0; v < 4; v++) {
		fill_msg(m, v);
		ok &= rtos_queue_send(&queue, m, RTOS_NO_WAIT) == RTOS_OK;
	}
	ok &= rtos_queue_send(&queue, m, RTOS_NO_WAIT) == RTOS_EFULL;
	ok &= rtos_queue_send(&queue, m, 2) == RTOS_ETIMEOUT;
	for (v = 0; v < 10; v++) {
		ok &= rtos_queue_receive(&queue, m, RTOS_NO_WAIT) == RTOS_OK && msg_is(m, v);
		fill_msg(m, v + 4);
		ok &= rtos_queue_send(&queue, m, RTOS_NO_WAIT) == RTOS_OK;
	}
	for (v = 10; v < 14; v++)
		ok &= rtos_queue_receive(&queue, m, RTOS_NO_WAIT) == RTOS_OK && msg_is(m, v);
	ok &= rtos_queue_receive(&queue, m, RTOS_NO_WAIT) == RTOS_EEMPTY;
	ok &= rtos_queue_receive(&queue, m, 3) == RTOS_ETIMEOUT;

	trail_reset();
	ok &= spawn(0, queue_receiver, NULL, HIGH_PRIO);
	fill_msg(m, 7);
	ok &= rtos_queue_send(&queue, m, RTOS_NO_WAIT) == RTOS_OK && trail_is("R");
	ok &= queue.count == 0;

	for (v = 0; v < 4; v++) {
		fill_msg(m, v);
		ok &= rtos_queue_send(&queue, m, RTOS_NO_WAIT) == RTOS_OK;
	}
	ok &= spawn(1, queue_sender, NULL, LOW_PRIO);
	settle();
	ok &= trail_is("R");
	ok &= rtos_queue_receive(&queue, m, RTOS_NO_WAIT) == RTOS_OK && msg_is(m, 0);
	settle();
	ok &= trail_is("RS") && queue.count == 4;
	for (v = 1; v < 4; v++)
		ok &= rtos_queue_receive(&queue, m, RTOS_NO_WAIT) == RTOS_OK && msg_is(m, v);
	ok &= rtos_queue_receive(&queue, m, RTOS_NO_WAIT) == RTOS_OK && msg_is(m, 9);
	check("queue", ok);
	reap();
}

static void *pool_got;

static void pool_waiter(void *arg)
{
	(void)arg;
	if (rtos_pool_alloc(&pool, &pool_got, RTOS_WAIT_FOREVER) == RTOS_OK)
		mark('P');
}

/* Until empty, a timeout, bad frees refused, a waiter handed the freed block. */
static void test_pool(void)
{
	void *b[4], *extra;
	unsigned i;
	bool ok;

	ok = rtos_pool_init(&pool, pool_area, 20, 4) == RTOS_OK && pool.block_size == 24;
	for (i = 0; i < 4; i++)
		ok &= rtos_pool_alloc(&pool, &b[i], RTOS_NO_WAIT) == RTOS_OK;
	ok &= rtos_pool_alloc(&pool, &extra, RTOS_NO_WAIT) == RTOS_EEMPTY;
	ok &= rtos_pool_alloc(&pool, &extra, 2) == RTOS_ETIMEOUT;
	ok &= rtos_pool_free(&pool, b[2]) == RTOS_OK;
	ok &= rtos_pool_free(&pool, b[2]) == RTOS_EINVAL;
	ok &= rtos_pool_free(&pool, (uint8_t *)b[1] + 8) == RTOS_EINVAL;
	ok &= rtos_pool_free(&pool, &extra) == RTOS_EINVAL;
	ok &= rtos_pool_alloc(&pool, &extra, RTOS_NO_WAIT) == RTOS_OK && extra == b[2];

	trail_reset();
	pool_got = NULL;
	ok &= spawn(0, pool_waiter, NULL, HIGH_PRIO) && trail_is("");
	ok &= rtos_pool_free(&pool, b[0]) == RTOS_OK && trail_is("P") && pool_got == b[0];
	ok &= pool.free_count == 0;
	check("pool", ok);
	reap();
}

static volatile unsigned isr_count;
static volatile uint64_t woken_at;

static void resumed(void *arg)
{
	(void)arg;
	for (;;) {
		rtos_task_suspend(rtos_task_self());
		woken_at = rtos_counter();
		mark('H');
	}
}

static void sgi_isr(uint32_t intid, void *arg)
{
	(void)arg;
	if (intid == SGI_WAKE)
		isr_count++;
	rtos_sem_give(&sem);
	rtos_task_resume(helper[0]);
}

/*
 * The SGI travels through the GIC (the hypervisor, when there is one). The
 * task its handler resumes must run on the way out of that very interrupt:
 * by the time this task sees the handler's count move, the resumed one has
 * run. No timing involved, only order.
 */
static void test_sgi(void)
{
	uint64_t sent, limit = rtos_counter_hz();
	bool ok, woken;

	trail_reset();
	isr_count = 0;
	woken_at = 0;
	ok = rtos_sem_init(&sem, 0) == RTOS_OK;
	ok &= spawn(0, resumed, NULL, HIGH_PRIO);
	ok &= rtos_irq_attach(SGI_WAKE, 0x80, sgi_isr, NULL) == RTOS_OK;
	sent = rtos_counter();
	rtos_sgi_self(SGI_WAKE);
	while (!isr_count && rtos_counter() - sent < limit)
		;
	woken = woken_at != 0;
	mark('C');
	ok &= isr_count == 1 && woken && trail_is("HC");
	ok &= rtos_sem_take(&sem, 10) == RTOS_OK;
	rtos_sgi_self(SGI_WAKE);
	ok &= rtos_sem_take(&sem, 10) == RTOS_OK && isr_count == 2;
	ok &= rtos_irq_attach(SGI_WAKE, 0x80, NULL, NULL) == RTOS_OK;
	reap();
	check("sgi", ok);
	if (!ok)
		rtos_printf("selftest: sgi isr %u woken %d trail %s\n", isr_count, woken,
			    (const char *)trail);
}

static volatile unsigned svc_count;

static void svc_handler(void)
{
	svc_count++;
	rtos_task_resume(helper[0]);
}

/* svc #0 is synchronous: the resumed task has run once the instruction retires. */
static void test_svc(void)
{
	bool ok;

	trail_reset();
	svc_count = 0;
	ok = spawn(0, resumed, NULL, HIGH_PRIO);
	rtos_svc_attach(svc_handler);
	__asm__ volatile("svc #0" ::: "memory");
	mark('C');
	ok &= svc_count == 1 && trail_is("HC");
	rtos_svc_attach(NULL);
	__asm__ volatile("svc #0" ::: "memory");
	ok &= svc_count == 1;
	reap();
	check("svc", ok);
}

static void quick(void *arg)
{
	(*(volatile unsigned *)arg)++;
}

/* Tasks that return free their slots: more of them than there are slots. */
static void test_task_exit(void)
{
	volatile unsigned runs = 0;
	unsigned i;
	bool ok = true;

	for (i = 0; i < 2 * RTOS_MAX_TASKS; i++)
		ok &= spawn(0, quick, (void *)&runs, HIGH_PRIO);
	check("task-exit", ok && runs == 2 * RTOS_MAX_TASKS);
	reap();
}

static void controller(void *arg)
{
	rtos_task_t task;

	(void)arg;
	if (rtos_sem_init(&go, 0) != RTOS_OK || rtos_sem_init(&quiet, 0) != RTOS_OK ||
	    rtos_task_create(&task, "sentinel", sentinel, NULL, RTOS_PRIORITIES - 2,
			     sentinel_stack, STACK_SIZE) != RTOS_OK)
		rtos_printf("selftest: no sentinel\n");
	test_preempt();
	test_suspend();
	test_yield();
	test_round_robin();
	test_sleep();
	test_tick_deadline();
	test_sem();
	test_queue();
	test_pool();
	test_sgi();
	test_svc();
	test_task_exit();
	rtos_printf("selftest: %u passed, %u failed\n", passed, failed);
	rtos_power_off();
}

/* The value of key=... in the bootargs, copied into buf; false if absent. */
static bool bootarg(const char *key, char *buf, unsigned size)
{
	const char *s = rtos_bootargs();
	unsigned i, n;

	for (; *s; s++) {
		if (s != rtos_bootargs() && s[-1] != ' ')
			continue;
		for (i = 0; key[i] && s[i] == key[i]; i++)
			;
		if (key[i] || s[i] != '=')
			continue;
		s += i + 1;
		for (n = 0; s[n] && s[n] != ' ' && n + 1 < size; n++)
			buf[n] = s[n];
		buf[n] = '\0';
		return true;
	}
	return false;
}

static uint32_t parse_u32(const char *s)
{
	uint32_t v = 0;

	while (*s >= '0' && *s <= '9')
		v = v * 10 + (uint32_t)(*s++ - '0');
	return v;
}

void rtos_selftest(void)
{
	char val[16];
	rtos_task_t task;
	bool linear = bootarg("sched", val, sizeof(val)) && val[0] == 'l';

	if (bootarg("tick_hz", val, sizeof(val)) && parse_u32(val))
		tick_hz = parse_u32(val);
	rtos_printf("selftest: tick %u Hz, %s ready queue\n", tick_hz, linear ? "linear" : "bitmap");
	if (rtos_init(rtos_boot_dtb(), tick_hz) != RTOS_OK) {
		rtos_printf("selftest: rtos_init failed\nselftest: 0 passed, 1 failed\n");
		rtos_power_off();
	}
	rtos_use_linear_ready_queue(linear);
	rtos_task_create(&task, "selftest", controller, NULL, CONTROLLER_PRIO, controller_stack,
			 STACK_SIZE);
	rtos_start();
}
