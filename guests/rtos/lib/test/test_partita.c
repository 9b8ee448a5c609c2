/*
 * Host tests of the Partita library (../partita.c), built with -DHOST_TEST:
 * a scripted hypervisor answers its hypercalls and a fake RTOS counts its
 * sleeps, so the retry and timeout logic, the decoding of what comes back
 * in x1..x3 and the status mapping run without a hypervisor.
 *   make -C guests/rtos host-test   (runs these with the kernel's tests)
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rtos_partita.h"
#include "harness.h"


/* ---- The scripted hypervisor ---- */

#define MAX_CALLS	64
#define MAX_SCRIPT	8

struct call {
	unsigned long fn, a[4];
};

static struct call calls[MAX_CALLS];
static unsigned ncalls;
/* Answers in order: the first one first_repeats times, the last one for ever. */
static struct partita_result script[MAX_SCRIPT];
static unsigned script_len, first_repeats;
/* Runs at each call, to write into the caller's buffer as the hypervisor would. */
static void (*on_call)(const struct call *c);

struct partita_result test_hypercall(unsigned long fn, unsigned long a1, unsigned long a2,
				     unsigned long a3, unsigned long a4);

struct partita_result test_hypercall(unsigned long fn, unsigned long a1, unsigned long a2,
				     unsigned long a3, unsigned long a4)
{
	struct call c = { fn, { a1, a2, a3, a4 } };
	unsigned n = ncalls++;

	if (n < MAX_CALLS)
		calls[n] = c;
	if (on_call)
		on_call(&c);
	if (script_len == 0)
		return (struct partita_result){ PARTITA_ENOTSUPPORTED, 0, 0, 0 };
	n = n < first_repeats ? 0 : n - first_repeats + 1;
	return script[n < script_len ? n : script_len - 1];
}

static void answer(long status, unsigned long x1, unsigned long x2, unsigned long x3)
{
	if (script_len < MAX_SCRIPT)
		script[script_len++] = (struct partita_result){ status, x1, x2, x3 };
}

/* ---- The fake RTOS ---- */

static uint64_t ticks;
static uint32_t tick_step;	/* how far one rtos_sleep moves time */
static unsigned sleeps;
static uint32_t last_sleep;
static unsigned sleep_limit;	/* 0: none; else leaves the task by longjmp */
static jmp_buf leave_task;

static uint32_t irq_intid;
static uint8_t irq_prio;
static rtos_isr irq_isr;
static void *irq_arg;
static rtos_status irq_result;
static unsigned sem_gives;
static rtos_sem_t *sem_given;

static rtos_entry task_entry;
static void *task_arg;
static uint32_t task_prio;
static rtos_status task_result;

uint64_t rtos_ticks(void)
{
	return ticks;
}

void rtos_sleep(uint32_t t)
{
	sleeps++;
	last_sleep = t;
	ticks += tick_step;
	if (sleep_limit && sleeps >= sleep_limit)
		longjmp(leave_task, 1);
}

rtos_status rtos_sem_give(rtos_sem_t *sem)
{
	sem_gives++;
	sem_given = sem;
	return RTOS_OK;
}

rtos_status rtos_irq_attach(uint32_t intid, uint8_t priority, rtos_isr isr, void *arg)
{
	irq_intid = intid;
	irq_prio = priority;
	irq_isr = isr;
	irq_arg = arg;
	return irq_result;
}

rtos_status rtos_task_create(rtos_task_t *task, const char *name, rtos_entry entry, void *arg,
			     uint32_t priority, void *stack, size_t stack_size)
{
	(void)name;
	(void)stack;
	(void)stack_size;
	*task = (rtos_task_t)(uintptr_t)0x1000;
	task_entry = entry;
	task_arg = arg;
	task_prio = priority;
	return task_result;
}

static void reset(void)
{
	ncalls = 0;
	script_len = 0;
	first_repeats = 1;
	on_call = NULL;
	ticks = 100;
	tick_step = 1;
	sleeps = 0;
	last_sleep = 0;
	sleep_limit = 0;
	irq_intid = 0;
	irq_isr = NULL;
	irq_arg = NULL;
	irq_result = RTOS_OK;
	sem_gives = 0;
	sem_given = NULL;
	task_entry = NULL;
	task_result = RTOS_OK;
}

static bool all_polls(void)
{
	unsigned i;

	for (i = 0; i < ncalls && i < MAX_CALLS; i++)
		if (calls[i].a[3] != PARTITA_POLL)
			return false;
	return true;
}

static unsigned long addr(const void *p)
{
	return (unsigned long)(uintptr_t)p;
}

/* ---- Queuing ports ---- */

static void send_first_try(void)
{
	char msg[5] = "ping";

	answer(PARTITA_OK, 0, 0, 0);
	EXPECT(rtos_port_send(3, msg, 5, 10) == PARTITA_OK);
	EXPECT(ncalls == 1 && sleeps == 0);
	EXPECT(calls[0].fn == PARTITA_PORT_SEND && calls[0].a[0] == 3);
	EXPECT(calls[0].a[1] == addr(msg) && calls[0].a[2] == 5 && calls[0].a[3] == PARTITA_POLL);
}

/* RTOS_NO_WAIT asks once and says why, as rtos_queue_send does. */
static void send_no_wait_full(void)
{
	answer(PARTITA_EFULL, 0, 0, 0);
	EXPECT(rtos_port_send(0, "x", 1, RTOS_NO_WAIT) == PARTITA_EFULL);
	EXPECT(ncalls == 1 && sleeps == 0);
}

static void send_waits_for_room(void)
{
	answer(PARTITA_EFULL, 0, 0, 0);
	answer(PARTITA_EFULL, 0, 0, 0);
	answer(PARTITA_EFULL, 0, 0, 0);
	answer(PARTITA_OK, 0, 0, 0);
	EXPECT(rtos_port_send(1, "x", 1, 10) == PARTITA_OK);
	EXPECT(ncalls == 4 && sleeps == 3 && last_sleep == 1);
	EXPECT(all_polls());
}

/* A timeout of n ticks polls at 0, 1, .. n ticks, then gives up. */
static void send_times_out(void)
{
	answer(PARTITA_EFULL, 0, 0, 0);
	EXPECT(rtos_port_send(1, "x", 1, 5) == PARTITA_ETIMEOUT);
	EXPECT(ncalls == 6 && sleeps == 5 && ticks == 105);
	EXPECT(all_polls());
}

/* Time is counted in ticks passed, not in sleeps: a late wake-up counts whole. */
static void timeout_counts_ticks(void)
{
	tick_step = 3;
	answer(PARTITA_EFULL, 0, 0, 0);
	EXPECT(rtos_port_send(1, "x", 1, 5) == PARTITA_ETIMEOUT);
	EXPECT(ncalls == 3 && sleeps == 2);
}

static void receive_forever(void)
{
	char buf[16];
	uint32_t len = 0;

	answer(PARTITA_EEMPTY, 0, 0, 0);
	answer(PARTITA_EEMPTY, 0, 0, 0);
	answer(PARTITA_EEMPTY, 0, 0, 0);
	answer(PARTITA_EEMPTY, 0, 0, 0);
	answer(PARTITA_EEMPTY, 0, 0, 0);
	answer(PARTITA_OK, 7, 2, 0);
	EXPECT(rtos_port_receive(2, buf, sizeof(buf), &len, RTOS_WAIT_FOREVER) == PARTITA_OK);
	EXPECT(len == 7 && ncalls == 6 && sleeps == 5);
	EXPECT(calls[0].fn == PARTITA_PORT_RECEIVE && calls[0].a[0] == 2);
	EXPECT(calls[0].a[1] == addr(buf) && calls[0].a[2] == sizeof(buf));
	EXPECT(all_polls());
}

/* Forever is forever: many more polls than MAX_SCRIPT, ticks running on. */
static void receive_forever_long(void)
{
	uint32_t len = 0;
	char buf[4];

	first_repeats = 5000;
	answer(PARTITA_EEMPTY, 0, 0, 0);
	answer(PARTITA_OK, 3, 0, 0);
	EXPECT(rtos_port_receive(0, buf, sizeof(buf), &len, RTOS_WAIT_FOREVER) == PARTITA_OK);
	EXPECT(len == 3 && ncalls == 5001 && sleeps == 5000 && ticks == 5100);
}

/* Too small a buffer: the message stays queued and waiting cannot help. */
static void receive_too_small(void)
{
	uint32_t len = 0;
	char buf[8];

	answer(PARTITA_ESMALL, 100, 0, 0);
	EXPECT(rtos_port_receive(0, buf, sizeof(buf), &len, RTOS_WAIT_FOREVER) == PARTITA_ESMALL);
	EXPECT(len == 100 && ncalls == 1 && sleeps == 0);
}

static void receive_no_wait_empty(void)
{
	uint32_t len = 55;
	char buf[8];

	answer(PARTITA_EEMPTY, 0, 0, 0);
	EXPECT(rtos_port_receive(0, buf, sizeof(buf), &len, RTOS_NO_WAIT) == PARTITA_EEMPTY);
	EXPECT(len == 55 && ncalls == 1 && sleeps == 0);
}

/* Only "full" and "empty" are worth waiting for; anything else returns at once. */
static void errors_pass_through(void)
{
	static const long errs[] = { PARTITA_EDENIED, PARTITA_EINVAL, PARTITA_EFAULT,
				     PARTITA_ETOOLONG, PARTITA_ENOTSUPPORTED };
	uint32_t len = 9;
	char buf[8];
	unsigned i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		reset();
		answer(errs[i], 0, 0, 0);
		EXPECT(rtos_port_send(0, buf, 1, RTOS_WAIT_FOREVER) == errs[i]);
		EXPECT(rtos_port_receive(0, buf, 8, &len, RTOS_WAIT_FOREVER) == errs[i]);
		EXPECT(ncalls == 2 && sleeps == 0 && len == 9);
	}
}

/* In an ISR or before rtos_start no tick comes: waiting must fail, not spin. */
static void wait_without_ticks(void)
{
	uint32_t len;
	char buf[8];

	tick_step = 0;
	sleep_limit = 10;
	answer(PARTITA_EFULL, 0, 0, 0);
	if (!setjmp(leave_task))
		EXPECT(rtos_port_send(0, buf, 1, RTOS_WAIT_FOREVER) == PARTITA_ESTATE);
	EXPECT(ncalls == 1 && sleeps == 1);
	reset();
	tick_step = 0;
	sleep_limit = 10;
	answer(PARTITA_EEMPTY, 0, 0, 0);
	if (!setjmp(leave_task))
		EXPECT(rtos_port_receive(0, buf, 8, &len, 10) == PARTITA_ESTATE);
	EXPECT(ncalls == 1 && sleeps == 1);
	reset();
	EXPECT(rtos_port_receive(0, buf, 8, NULL, 10) == PARTITA_EINVAL);
	EXPECT(ncalls == 0);
}

/* ---- Sampling ports ---- */

static void sample_read_decodes(void)
{
	struct rtos_sample s;
	char buf[32];

	answer(PARTITA_OK, 12, 1500, 1);
	EXPECT(rtos_sample_read(4, buf, sizeof(buf), &s) == PARTITA_OK);
	EXPECT(s.len == 12 && s.age_us == 1500 && s.valid);
	EXPECT(calls[0].fn == PARTITA_PORT_RECEIVE && calls[0].a[0] == 4);
	EXPECT(calls[0].a[1] == addr(buf) && calls[0].a[2] == 32 && calls[0].a[3] == PARTITA_POLL);
	reset();
	answer(PARTITA_OK, 3, 90000, 0);
	EXPECT(rtos_sample_read(4, buf, sizeof(buf), &s) == PARTITA_OK);
	EXPECT(s.len == 3 && s.age_us == 90000 && !s.valid);
}

static void sample_read_empty_and_small(void)
{
	struct rtos_sample s = { 77, 88, true };
	char buf[4];

	answer(PARTITA_EEMPTY, 0, 0, 0);
	EXPECT(rtos_sample_read(0, buf, sizeof(buf), &s) == PARTITA_EEMPTY);
	EXPECT(s.len == 77 && s.age_us == 88 && s.valid);
	EXPECT(ncalls == 1 && sleeps == 0);
	reset();
	answer(PARTITA_ESMALL, 64, 5, 1);
	EXPECT(rtos_sample_read(0, buf, sizeof(buf), &s) == PARTITA_ESMALL);
	EXPECT(s.len == 64 && !s.valid);
	reset();
	EXPECT(rtos_sample_read(0, buf, sizeof(buf), NULL) == PARTITA_EINVAL && ncalls == 0);
}

static void sample_write_never_waits(void)
{
	answer(PARTITA_OK, 0, 0, 0);
	EXPECT(rtos_sample_write(2, "abc", 3) == PARTITA_OK);
	EXPECT(calls[0].fn == PARTITA_PORT_SEND && calls[0].a[0] == 2 && calls[0].a[2] == 3);
	EXPECT(calls[0].a[3] == PARTITA_POLL);
	reset();
	answer(PARTITA_ETOOLONG, 0, 0, 0);
	EXPECT(rtos_sample_write(2, "abc", 3) == PARTITA_ETOOLONG && ncalls == 1 && sleeps == 0);
}

/* ---- Port information ---- */

static void port_info_decodes(void)
{
	struct rtos_port_info i;

	answer(PARTITA_OK, PARTITA_CHANNEL_SAMPLING, 64, 10000);
	EXPECT(rtos_port_info(1, &i) == PARTITA_OK);
	EXPECT(calls[0].fn == PARTITA_PORT_INFO && calls[0].a[0] == 1);
	EXPECT(i.kind == PARTITA_CHANNEL_SAMPLING && i.max_message == 64 && i.refresh_us == 10000);
	EXPECT(i.depth == 0 && i.window == 0 && i.window_size == 0);
	reset();
	answer(PARTITA_OK, PARTITA_CHANNEL_QUEUING, 128, 16);
	EXPECT(rtos_port_info(2, &i) == PARTITA_OK);
	EXPECT(i.kind == PARTITA_CHANNEL_QUEUING && i.max_message == 128 && i.depth == 16);
	EXPECT(i.refresh_us == 0 && i.window == 0);
	reset();
	answer(PARTITA_OK, PARTITA_CHANNEL_SHARED_MEMORY, 0x10000, 0x70000000);
	EXPECT(rtos_port_info(3, &i) == PARTITA_OK);
	EXPECT(i.kind == PARTITA_CHANNEL_SHARED_MEMORY && i.window == 0x70000000);
	EXPECT(i.window_size == 0x10000 && i.max_message == 0 && i.depth == 0);
	reset();
	i.kind = 99;
	answer(PARTITA_EDENIED, 5, 5, 5);
	EXPECT(rtos_port_info(3, &i) == PARTITA_EDENIED && i.kind == 99);
	EXPECT(rtos_port_info(3, NULL) == PARTITA_EINVAL);
}

/* ---- Doorbells ---- */

static void isr_probe(uint32_t intid, void *arg)
{
	(void)intid;
	(void)arg;
}

static void doorbell_ring(void)
{
	answer(PARTITA_OK, 0, 0, 0);
	EXPECT(rtos_doorbell_ring(5) == PARTITA_OK);
	EXPECT(ncalls == 1 && calls[0].fn == PARTITA_DOORBELL_RING && calls[0].a[0] == 5);
}

static void doorbell_only_spis(void)
{
	int token;

	EXPECT(rtos_doorbell_attach(31, 0x80, isr_probe, NULL) == PARTITA_EINVAL);
	EXPECT(rtos_doorbell_attach(1020, 0x80, isr_probe, NULL) == PARTITA_EINVAL);
	EXPECT(irq_isr == NULL);
	EXPECT(rtos_doorbell_attach(48, 0x90, isr_probe, &token) == PARTITA_OK);
	EXPECT(irq_intid == 48 && irq_prio == 0x90 && irq_isr == isr_probe && irq_arg == &token);
	EXPECT(rtos_doorbell_attach(1019, 0x90, isr_probe, &token) == PARTITA_OK);
	EXPECT(ncalls == 0);
}

/* The RTOS's own refusals come back as the nearest PARTITA_* status. */
static void doorbell_status_mapping(void)
{
	irq_result = RTOS_ESTATE;
	EXPECT(rtos_doorbell_attach(40, 0x80, isr_probe, NULL) == PARTITA_ESTATE);
	irq_result = RTOS_EINVAL;
	EXPECT(rtos_doorbell_attach(40, 0x80, isr_probe, NULL) == PARTITA_EINVAL);
}

static void doorbell_gives_semaphore(void)
{
	rtos_sem_t sem;

	EXPECT(rtos_doorbell_attach_sem(50, 0xa0, NULL) == PARTITA_EINVAL);
	EXPECT(rtos_doorbell_attach_sem(50, 0xa0, &sem) == PARTITA_OK);
	EXPECT(irq_intid == 50 && irq_prio == 0xa0 && irq_isr != NULL && irq_arg == &sem);
	irq_isr(50, irq_arg);
	irq_isr(50, irq_arg);
	EXPECT(sem_gives == 2 && sem_given == &sem);
}

/* ---- Health monitor ---- */

static void hm_report_and_kick(void)
{
	uint64_t deadline = 1;

	answer(PARTITA_OK, 0, 0, 0);
	EXPECT(rtos_hm_report(0xdead) == PARTITA_OK);
	EXPECT(calls[0].fn == PARTITA_HM_REPORT && calls[0].a[0] == 0xdead);
	reset();
	answer(PARTITA_OK, 123456789, 0, 0);
	EXPECT(rtos_watchdog_kick(&deadline) == PARTITA_OK && deadline == 123456789);
	EXPECT(rtos_watchdog_kick(NULL) == PARTITA_OK);
	EXPECT(calls[0].fn == PARTITA_WATCHDOG_KICK && ncalls == 2);
	reset();
	answer(PARTITA_ESTATE, 42, 0, 0);
	EXPECT(rtos_watchdog_kick(&deadline) == PARTITA_ESTATE && deadline == 123456789);
}

/* ---- Timed outputs ---- */

static void tio_calls_pass_their_arguments(void)
{
	struct rtos_tio_stats stats = { 0, 0, 0 };
	uint32_t dropped = 0;

	answer(PARTITA_OK, 0, 0, 0);
	EXPECT(rtos_tio_write_at(0x3, 0x1, 1000) == PARTITA_OK);
	EXPECT(rtos_tio_periodic(0x4, 0x4, 2000, 500) == PARTITA_OK);
	EXPECT(calls[0].fn == PARTITA_TIO_WRITE_AT && calls[0].a[0] == 0x3 && calls[0].a[1] == 0x1 &&
	       calls[0].a[2] == 1000 && calls[0].a[3] == 0);
	EXPECT(calls[1].a[2] == 2000 && calls[1].a[3] == 500);
	reset();
	answer(PARTITA_OK, 2, 0, 0);
	EXPECT(rtos_tio_cancel(0x4, &dropped) == PARTITA_OK && dropped == 2);
	EXPECT(calls[0].fn == PARTITA_TIO_CANCEL && calls[0].a[0] == 0x4);
	reset();
	answer(PARTITA_OK, 10, 3, 12);
	EXPECT(rtos_tio_stats(&stats) == PARTITA_OK && stats.done == 10 && stats.max_error == 3 &&
	       stats.sum_error == 12);
	EXPECT(rtos_tio_stats(NULL) == PARTITA_EINVAL);
}

static void tio_refusals_pass_through(void)
{
	answer(PARTITA_ELATE, 0, 0, 0);
	EXPECT(rtos_tio_write_at(1, 1, 5) == PARTITA_ELATE);
	reset();
	answer(PARTITA_ETOOFAR, 0, 0, 0);
	EXPECT(rtos_tio_write_at(1, 1, 5) == PARTITA_ETOOFAR);
	EXPECT(strcmp(rtos_partita_status_name(PARTITA_ELATE), "ELATE") == 0);
	EXPECT(strcmp(rtos_partita_status_name(PARTITA_ETOOFAR), "ETOOFAR") == 0);
}

static void watchdog_task_kicks(void)
{
	uint64_t stack[128];
	struct rtos_watchdog wd;

	EXPECT(rtos_watchdog_start(&wd, 0, 3, stack, sizeof(stack)) == PARTITA_EINVAL);
	EXPECT(rtos_watchdog_start(NULL, 5, 3, stack, sizeof(stack)) == PARTITA_EINVAL);
	EXPECT(task_entry == NULL);
	EXPECT(rtos_watchdog_start(&wd, 5, 3, stack, sizeof(stack)) == PARTITA_OK);
	EXPECT(task_entry != NULL && task_arg == &wd && task_prio == 3);
	answer(PARTITA_OK, 0, 0, 0);
	answer(PARTITA_OK, 0, 0, 0);
	answer(PARTITA_EDENIED, 0, 0, 0);
	sleep_limit = 3;
	if (!setjmp(leave_task) && task_entry)
		task_entry(task_arg);
	/* Kicked first, then once per sleep of `every` ticks. */
	EXPECT(ncalls == 3 && sleeps == 3 && last_sleep == 5);
	EXPECT(calls[0].fn == PARTITA_WATCHDOG_KICK && calls[2].fn == PARTITA_WATCHDOG_KICK);
	EXPECT(wd.status == PARTITA_EDENIED);
	reset();
	task_result = RTOS_ENOMEM;
	EXPECT(rtos_watchdog_start(&wd, 5, 3, stack, sizeof(stack)) == PARTITA_EFULL);
}

/* Two records as the hypervisor encodes them: little endian, 32 bytes each. */
static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
	unsigned i;

	for (i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void write_records(const struct call *c)
{
	uint8_t *p = (uint8_t *)(uintptr_t)c->a[0];

	if (c->fn != PARTITA_HM_READ || c->a[1] < 64)
		return;
	memset(p, 0, 64);
	put_le(p, 7, 8);
	put_le(p + 8, 0x1122334455667788ull, 8);
	put_le(p + 16, 0xc6000099, 8);
	p[24] = 2;
	p[25] = 1;
	p[26] = PARTITA_HM_EV_ILLEGAL_HYPERCALL;
	p[27] = PARTITA_HM_ACT_LOG;
	put_le(p + 32, 8, 8);
	put_le(p + 40, 0x99, 8);
	p[56] = 1;
	p[58] = PARTITA_HM_EV_REPORTED;
	p[59] = PARTITA_HM_ACT_RESTART;
	put_le(p + 60, 0xabcd1234, 4);
}

static void hm_read_decodes(void)
{
	struct partita_hm_record r[4];
	struct rtos_hm_page page = { 0, 0, 0 };

	on_call = write_records;
	answer(PARTITA_OK, 2, 9, 3);
	EXPECT(rtos_hm_read(r, 4, 5, &page) == PARTITA_OK);
	EXPECT(calls[0].fn == PARTITA_HM_READ && calls[0].a[0] == addr(r));
	EXPECT(calls[0].a[1] == 4 * 32 && calls[0].a[2] == 5);
	EXPECT(page.count == 2 && page.next == 9 && page.lost == 3);
	EXPECT(r[0].seq == 7 && r[0].time == 0x1122334455667788ull && r[0].detail == 0xc6000099);
	EXPECT(r[0].partition == 2 && r[0].vcpu == 1 && r[0].code == 0);
	EXPECT(r[0].event == PARTITA_HM_EV_ILLEGAL_HYPERCALL && r[0].action == PARTITA_HM_ACT_LOG);
	EXPECT(r[1].seq == 8 && r[1].partition == 1 && r[1].code == 0xabcd1234);
	EXPECT(r[1].event == PARTITA_HM_EV_REPORTED && r[1].action == PARTITA_HM_ACT_RESTART);
	EXPECT(strcmp(rtos_hm_event_name(r[0].event), "illegal-hypercall") == 0);
	EXPECT(strcmp(rtos_hm_action_name(r[1].action), "restart") == 0);
}

static void hm_read_denied(void)
{
	struct partita_hm_record r[1];
	struct rtos_hm_page page = { 11, 12, 13 };

	answer(PARTITA_EDENIED, 0, 0, 0);
	EXPECT(rtos_hm_read(r, 1, 0, &page) == PARTITA_EDENIED);
	EXPECT(page.count == 11 && page.next == 12 && page.lost == 13);
	EXPECT(rtos_hm_read(r, 1, 0, NULL) == PARTITA_EINVAL && ncalls == 1);
}

static void names(void)
{
	EXPECT(strcmp(rtos_partita_status_name(PARTITA_OK), "OK") == 0);
	EXPECT(strcmp(rtos_partita_status_name(PARTITA_EBUSY), "EBUSY") == 0);
	EXPECT(strcmp(rtos_partita_status_name(PARTITA_EFAULT), "EFAULT") == 0);
	EXPECT(strcmp(rtos_partita_status_name(-14), "?") == 0);
	EXPECT(strcmp(rtos_partita_status_name(1), "?") == 0);
	EXPECT(strcmp(rtos_partita_status_name(RTOS_ACCEL_EDMA), "ACCEL_EDMA") == 0);
	EXPECT(strcmp(rtos_partita_status_name(RTOS_ACCEL_ECMD), "ACCEL_ECMD") == 0);
	for (long s = PARTITA_EFAULT; s <= PARTITA_OK; s++)
		EXPECT(strcmp(rtos_partita_status_name(s), "?") != 0);
	EXPECT(strcmp(rtos_hm_event_name(PARTITA_HM_EV_STAGE2_FAULT), "stage2-fault") == 0);
	EXPECT(strcmp(rtos_hm_event_name(PARTITA_HM_EV_WATCHDOG), "watchdog") == 0);
	EXPECT(strcmp(rtos_hm_event_name(PARTITA_HM_EV_BUDGET_OVERRUN), "budget-overrun") == 0);
	EXPECT(strcmp(rtos_hm_event_name(6), "?") == 0);
	EXPECT(strcmp(rtos_hm_action_name(PARTITA_HM_ACT_IGNORE), "ignore") == 0);
	EXPECT(strcmp(rtos_hm_action_name(PARTITA_HM_ACT_RESET_SYSTEM), "reset-system") == 0);
	EXPECT(strcmp(rtos_hm_action_name(PARTITA_HM_ACT_INJECT), "inject") == 0);
	EXPECT(strcmp(rtos_hm_action_name(7), "?") == 0);
}


static const struct test tests[] = {
	TEST(send_first_try),
	TEST(send_no_wait_full),
	TEST(send_waits_for_room),
	TEST(send_times_out),
	TEST(timeout_counts_ticks),
	TEST(receive_forever),
	TEST(receive_forever_long),
	TEST(receive_too_small),
	TEST(receive_no_wait_empty),
	TEST(errors_pass_through),
	TEST(wait_without_ticks),
	TEST(sample_read_decodes),
	TEST(sample_read_empty_and_small),
	TEST(sample_write_never_waits),
	TEST(port_info_decodes),
	TEST(doorbell_ring),
	TEST(doorbell_only_spis),
	TEST(doorbell_status_mapping),
	TEST(doorbell_gives_semaphore),
	TEST(hm_report_and_kick),
	TEST(watchdog_task_kicks),
	TEST(tio_calls_pass_their_arguments),
	TEST(tio_refusals_pass_through),
	TEST(hm_read_decodes),
	TEST(hm_read_denied),
	TEST(names),
};

int main(void)
{
	return run_tests(tests, sizeof(tests) / sizeof(tests[0]), "partita ", "partita library: ", reset);
}
