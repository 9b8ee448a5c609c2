/*
 * Tasks and the scheduler. Kernel state changes with IRQs masked (one CPU, so
 * that is the whole of the locking). The running task stays at the head of
 * its priority's FIFO in the ready queue, so "who runs next" is always the
 * head of the most urgent FIFO, or the idle task if there is none: a task
 * preempted by a more urgent one keeps its place, and rotating the FIFO is
 * all round robin needs.
 */
#include "port.h"
#include "arch.h"

#define IDLE_PRIO	RTOS_PRIORITIES
#define IDLE_STACK	2048
#define MIN_STACK	1024

static struct rtos_task tasks[RTOS_MAX_TASKS];
static struct rtos_task idle_task;
static uint64_t idle_stack[IDLE_STACK / 8] __attribute__((aligned(16)));
static struct rtos_wait_list ready;
static struct rtos_task *timeouts;	/* sorted by wake_at, equal ones FIFO */
static struct rtos_task *current;
static bool linear, started, in_isr;
static volatile uint64_t tick_count;

bool rtos_irq_disable(void)
{
	bool was = read_sysreg(daif) & (1u << 7);

	irq_mask();
	return was;
}

void rtos_irq_restore(bool was_disabled)
{
	if (!was_disabled)
		irq_unmask();
}

static struct rtos_task *pick_next(void)
{
	struct rtos_task *t = linear ? wl_first_linear(&ready) : wl_first(&ready);

	return t ? t : &idle_task;
}

/* IRQs masked; from a thread, or from the interrupt exit path. */
static void switch_to_next(void)
{
	struct rtos_task *prev = current, *next = pick_next();

	if (next == prev)
		return;
	current = next;
	next->dispatched_at = tick_count;
	ctx_switch(&prev->sp, next->sp);
}

void sched_reschedule(void)
{
	if (started && !in_isr)
		switch_to_next();
}

/* Called by head.S after an IRQ or SVC, on the interrupted task's stack. */
void rtos_preempt(void)
{
	if (started)
		switch_to_next();
}

bool sched_in_isr(void)
{
	return in_isr;
}

void sched_isr_enter(void)
{
	in_isr = true;
}

void sched_isr_exit(void)
{
	in_isr = false;
}

bool sched_started(void)
{
	return started;
}

struct rtos_task *sched_current(void)
{
	return current;
}

static void timeout_add(struct rtos_task *t, uint32_t ticks)
{
	struct rtos_task **link = &timeouts, *prev = NULL;

	t->wake_at = tick_count + ticks;
	while (*link && (*link)->wake_at <= t->wake_at) {
		prev = *link;
		link = &(*link)->tnext;
	}
	t->tnext = *link;
	t->tprev = prev;
	if (*link)
		(*link)->tprev = t;
	*link = t;
	t->timed = true;
}

static void timeout_remove(struct rtos_task *t)
{
	if (t->tprev)
		t->tprev->tnext = t->tnext;
	else
		timeouts = t->tnext;
	if (t->tnext)
		t->tnext->tprev = t->tprev;
	t->tnext = t->tprev = NULL;
	t->timed = false;
}

static void make_ready(struct rtos_task *t)
{
	t->state = TASK_READY;
	wl_push(&ready, t);
}

/* Takes t off whatever it is queued on; it ends up in no list at all. */
static void unlink_task(struct rtos_task *t)
{
	if (t->state == TASK_READY)
		wl_remove(&ready, t);
	if (t->wait) {
		wl_remove(t->wait, t);
		t->wait = NULL;
	}
	if (t->timed)
		timeout_remove(t);
}

void sched_wake(struct rtos_task *t, rtos_status result)
{
	unlink_task(t);
	t->result = result;
	make_ready(t);
}

rtos_status sched_block(struct rtos_wait_list *wl, uint32_t timeout)
{
	struct rtos_task *t = current;

	wl_remove(&ready, t);
	t->state = wl ? TASK_BLOCKED : TASK_SLEEPING;
	t->wait = wl;
	if (wl)
		wl_push(wl, t);
	if (timeout != RTOS_WAIT_FOREVER)
		timeout_add(t, timeout);
	t->result = RTOS_OK;
	switch_to_next();
	return t->result;
}

/*
 * The tick ISR: timeouts first, so a task woken now takes part in the
 * rotation. Only a task that has had at least one whole tick since it got
 * the CPU goes to the back: one that arrived by a yield an instant ago keeps
 * its turn, so tasks that yield to each other stay in step (Thread-Metric's
 * cooperative test counts on it).
 */
void sched_tick(void)
{
	tick_count++;
	while (timeouts && timeouts->wake_at <= tick_count)
		sched_wake(timeouts, timeouts->state == TASK_SLEEPING ? RTOS_OK : RTOS_ETIMEOUT);
	if (current != &idle_task && ready.head[current->prio] == current && tick_count >= current->dispatched_at + 2) {
		wl_rotate(&ready, current->prio);
		current->dispatched_at = tick_count;
	}
}

uint64_t rtos_ticks(void)
{
	return tick_count;
}

static bool valid_task(rtos_task_t t)
{
	return t >= &tasks[0] && t < &tasks[RTOS_MAX_TASKS] && t->state != TASK_FREE;
}

/* The first code of every task, entered from task_boot with IRQs masked. */
void task_run(struct rtos_task *t)
{
	irq_unmask();
	t->entry(t->arg);
	rtos_task_delete(t);
}

static void idle_entry(void *arg)
{
	(void)arg;
	for (;;)
		wfi();
}

/* A stack that looks as if ctx_switch had saved it, returning to task_boot. */
static void stack_setup(struct rtos_task *t, void *stack, size_t size)
{
	uint64_t top = ((uint64_t)stack + size) & ~15ull;
	uint64_t *frame = (uint64_t *)(top - CTX_FRAME_WORDS * 8);
	int i;

	for (i = 0; i < CTX_FRAME_WORDS; i++)
		frame[i] = 0;
	frame[0] = (uint64_t)t;
	frame[CTX_FRAME_WORDS - 1] = (uint64_t)task_boot;
	t->sp = (uint64_t)frame;
	t->stack_lo = (uint64_t)stack;
	t->stack_hi = (uint64_t)stack + size;
}

static void task_setup(struct rtos_task *t, const char *name, rtos_entry entry, void *arg,
		       uint32_t prio)
{
	t->next = t->prev = t->tnext = t->tprev = NULL;
	t->wait = NULL;
	t->timed = false;
	t->xfer = NULL;
	t->name = name ? name : "";
	t->entry = entry;
	t->arg = arg;
	t->prio = prio;
	t->result = RTOS_OK;
}

void sched_init(void)
{
	wl_init(&ready);
	task_setup(&idle_task, "idle", idle_entry, NULL, IDLE_PRIO);
	stack_setup(&idle_task, idle_stack, sizeof(idle_stack));
	idle_task.state = TASK_READY;
}

/* A free slot, or NULL; *busy if some live task's stack overlaps [lo, hi). */
static struct rtos_task *free_slot(uint64_t lo, uint64_t hi, bool *busy)
{
	struct rtos_task *slot = NULL;
	int i;

	*busy = false;
	for (i = 0; i < RTOS_MAX_TASKS; i++) {
		struct rtos_task *t = &tasks[i];

		if (t->state == TASK_FREE) {
			if (!slot)
				slot = t;
		} else if (t->stack_lo < hi && lo < t->stack_hi) {
			*busy = true;
		}
	}
	return slot;
}

rtos_status rtos_task_create(rtos_task_t *task, const char *name, rtos_entry entry, void *arg,
			     uint32_t priority, void *stack, size_t stack_size)
{
	uint64_t lo = (uint64_t)stack;
	struct rtos_task *t;
	bool was, busy;

	if (!task || !entry || priority >= RTOS_PRIORITIES || !stack ||
	    (lo & 15) || stack_size < MIN_STACK || lo + stack_size < lo)
		return RTOS_EINVAL;
	if (in_isr)
		return RTOS_ESTATE;
	was = rtos_irq_disable();
	t = free_slot(lo, lo + stack_size, &busy);
	if (!t || busy) {
		rtos_irq_restore(was);
		return busy ? RTOS_EINVAL : RTOS_ENOMEM;
	}
	task_setup(t, name, entry, arg, priority);
	stack_setup(t, stack, stack_size);
	*task = t;
	make_ready(t);
	sched_reschedule();
	rtos_irq_restore(was);
	return RTOS_OK;
}

rtos_status rtos_task_delete(rtos_task_t task)
{
	bool was;

	if (in_isr)
		return RTOS_ESTATE;
	was = rtos_irq_disable();
	if (!valid_task(task)) {
		rtos_irq_restore(was);
		return RTOS_EINVAL;
	}
	unlink_task(task);
	task->state = TASK_FREE;
	/* Deleting itself: this switch never comes back. */
	if (task == current)
		switch_to_next();
	rtos_irq_restore(was);
	return RTOS_OK;
}

rtos_task_t rtos_task_self(void)
{
	return current == &idle_task ? NULL : current;
}

rtos_status rtos_task_suspend(rtos_task_t task)
{
	rtos_status s = RTOS_OK;
	bool was = rtos_irq_disable();

	if (!valid_task(task))
		s = RTOS_EINVAL;
	else if (task->state != TASK_READY)
		s = RTOS_ESTATE;
	if (s == RTOS_OK) {
		wl_remove(&ready, task);
		task->state = TASK_SUSPENDED;
		if (task == current)
			sched_reschedule();
	}
	rtos_irq_restore(was);
	return s;
}

rtos_status rtos_task_resume(rtos_task_t task)
{
	rtos_status s = RTOS_OK;
	bool was = rtos_irq_disable();

	if (!valid_task(task))
		s = RTOS_EINVAL;
	else if (task->state != TASK_SUSPENDED)
		s = RTOS_ESTATE;
	if (s == RTOS_OK) {
		make_ready(task);
		sched_reschedule();
	}
	rtos_irq_restore(was);
	return s;
}

void rtos_yield(void)
{
	bool was;

	if (!started || in_isr || current == &idle_task)
		return;
	was = rtos_irq_disable();
	wl_rotate(&ready, current->prio);
	switch_to_next();
	rtos_irq_restore(was);
}

void rtos_sleep(uint32_t ticks)
{
	bool was;

	if (!started || in_isr || current == &idle_task)
		return;
	if (ticks == 0) {
		rtos_yield();
		return;
	}
	was = rtos_irq_disable();
	sched_block(NULL, ticks);
	rtos_irq_restore(was);
}

void rtos_use_linear_ready_queue(bool use)
{
	linear = use;
}

void rtos_start(void)
{
	irq_mask();
	current = pick_next();
	started = true;
	tick_count = 0;
	current->dispatched_at = 0;
	tick_arm();
	ctx_start(current->sp);
}
