/*
 * Partita's channels and health monitor for RTOS tasks (rtos_partita.h).
 * Every hypercall here polls; waiting is the RTOS's, one tick at a time.
 */
#include "rtos_partita.h"

#include "hypercall.h"

/* The hypervisor writes records straight into the caller's array. */
_Static_assert(sizeof(struct partita_hm_record) == 32, "HM records are 32 bytes");
_Static_assert(__builtin_offsetof(struct partita_hm_record, partition) == 24, "HM record layout");
_Static_assert(__builtin_offsetof(struct partita_hm_record, code) == 28, "HM record layout");

static unsigned long addr(const void *p)
{
	return (unsigned long)(uintptr_t)p;
}

static long from_rtos(rtos_status s)
{
	switch (s) {
	case RTOS_OK: return PARTITA_OK;
	case RTOS_EEMPTY: return PARTITA_EEMPTY;
	/* No free task slot is "no room" too. */
	case RTOS_EFULL: case RTOS_ENOMEM: return PARTITA_EFULL;
	case RTOS_ETIMEOUT: return PARTITA_ETIMEOUT;
	case RTOS_ESTATE: return PARTITA_ESTATE;
	default: return PARTITA_EINVAL;
	}
}

/*
 * After a poll found the port full or empty (`busy`): sleeps one tick,
 * unless the timeout started at `start` has run out. RTOS_NO_WAIT hands
 * back `busy` itself, so one poll reads like the RTOS's own queues.
 */
static long wait_tick(uint64_t start, uint32_t timeout, long busy)
{
	uint64_t before;

	if (timeout == RTOS_NO_WAIT)
		return busy;
	before = rtos_ticks();
	if (timeout != RTOS_WAIT_FOREVER && before - start >= timeout)
		return PARTITA_ETIMEOUT;
	rtos_sleep(1);
	/*
	 * Where no task can sleep (an ISR, before rtos_start, the idle task)
	 * rtos_sleep returns at once and no tick can come: retrying would
	 * spin for ever.
	 */
	if (rtos_ticks() == before)
		return PARTITA_ESTATE;
	return PARTITA_OK;
}

long rtos_port_send(uint32_t channel, const void *msg, uint32_t len, uint32_t timeout)
{
	uint64_t start = rtos_ticks();
	struct partita_result r;
	long s;

	for (;;) {
		r = hypercall(PARTITA_PORT_SEND, channel, addr(msg), len, PARTITA_POLL);
		if (r.status != PARTITA_EFULL)
			return r.status;
		s = wait_tick(start, timeout, r.status);
		if (s != PARTITA_OK)
			return s;
	}
}

long rtos_port_receive(uint32_t channel, void *buf, uint32_t size, uint32_t *len,
		       uint32_t timeout)
{
	uint64_t start = rtos_ticks();
	struct partita_result r;
	long s;

	if (!len)
		return PARTITA_EINVAL;
	for (;;) {
		r = hypercall(PARTITA_PORT_RECEIVE, channel, addr(buf), size, PARTITA_POLL);
		if (r.status == PARTITA_OK || r.status == PARTITA_ESMALL)
			*len = (uint32_t)r.value;
		if (r.status != PARTITA_EEMPTY)
			return r.status;
		s = wait_tick(start, timeout, r.status);
		if (s != PARTITA_OK)
			return s;
	}
}

long rtos_sample_write(uint32_t channel, const void *msg, uint32_t len)
{
	return hypercall(PARTITA_PORT_SEND, channel, addr(msg), len, PARTITA_POLL).status;
}

long rtos_sample_read(uint32_t channel, void *buf, uint32_t size, struct rtos_sample *sample)
{
	struct partita_result r;

	if (!sample)
		return PARTITA_EINVAL;
	r = hypercall(PARTITA_PORT_RECEIVE, channel, addr(buf), size, PARTITA_POLL);
	if (r.status == PARTITA_OK || r.status == PARTITA_ESMALL) {
		sample->len = (uint32_t)r.value;
		sample->age_us = r.status == PARTITA_OK ? r.value2 : 0;
		sample->valid = r.status == PARTITA_OK && r.value3 != 0;
	}
	return r.status;
}

long rtos_port_info(uint32_t channel, struct rtos_port_info *info)
{
	struct partita_result r;

	if (!info)
		return PARTITA_EINVAL;
	r = hypercall(PARTITA_PORT_INFO, channel, 0, 0, 0);
	if (r.status != PARTITA_OK)
		return r.status;
	*info = (struct rtos_port_info){ .kind = (uint32_t)r.value };
	/* x2 and x3 mean something else for each kind. */
	switch (r.value) {
	case PARTITA_CHANNEL_SAMPLING:
		info->max_message = (uint32_t)r.value2;
		info->refresh_us = r.value3;
		break;
	case PARTITA_CHANNEL_QUEUING:
		info->max_message = (uint32_t)r.value2;
		info->depth = (uint32_t)r.value3;
		break;
	case PARTITA_CHANNEL_SHARED_MEMORY:
		info->window_size = r.value2;
		info->window = r.value3;
		break;
	}
	return PARTITA_OK;
}

long rtos_doorbell_ring(uint32_t channel)
{
	return hypercall(PARTITA_DOORBELL_RING, channel, 0, 0, 0).status;
}

long rtos_doorbell_attach(uint32_t intid, uint8_t priority, rtos_isr isr, void *arg)
{
	/* rtos_irq_attach takes SGIs and PPIs too, but a doorbell is always an SPI. */
	if (intid < FIRST_SPI || intid > LAST_SPI)
		return PARTITA_EINVAL;
	return from_rtos(rtos_irq_attach(intid, priority, isr, arg));
}

static void give_sem(uint32_t intid, void *sem)
{
	(void)intid;
	rtos_sem_give(sem);
}

long rtos_doorbell_attach_sem(uint32_t intid, uint8_t priority, rtos_sem_t *sem)
{
	if (!sem)
		return PARTITA_EINVAL;
	return rtos_doorbell_attach(intid, priority, give_sem, sem);
}

long rtos_hm_report(uint32_t code)
{
	return hypercall(PARTITA_HM_REPORT, code, 0, 0, 0).status;
}

long rtos_watchdog_kick(uint64_t *deadline)
{
	struct partita_result r = hypercall(PARTITA_WATCHDOG_KICK, 0, 0, 0, 0);

	if (r.status == PARTITA_OK && deadline)
		*deadline = r.value;
	return r.status;
}

static void watchdog_task(void *arg)
{
	struct rtos_watchdog *wd = arg;

	for (;;) {
		wd->status = rtos_watchdog_kick(NULL);
		rtos_sleep(wd->every);
	}
}

long rtos_watchdog_start(struct rtos_watchdog *wd, uint32_t every, uint32_t priority,
			 void *stack, size_t stack_size)
{
	if (!wd || every == 0 || every == RTOS_WAIT_FOREVER)
		return PARTITA_EINVAL;
	wd->every = every;
	wd->status = PARTITA_OK;
	return from_rtos(rtos_task_create(&wd->task, "watchdog", watchdog_task, wd, priority,
					  stack, stack_size));
}

long rtos_hm_read(struct partita_hm_record *records, uint32_t max, uint64_t from,
		  struct rtos_hm_page *page)
{
	struct partita_result r;

	if (!page)
		return PARTITA_EINVAL;
	r = hypercall(PARTITA_HM_READ, addr(records), (unsigned long)max * sizeof(*records),
		      from, 0);
	if (r.status != PARTITA_OK)
		return r.status;
	page->count = (uint32_t)r.value;
	page->next = r.value2;
	page->lost = r.value3;
	return PARTITA_OK;
}

/* Switches, not tables: the image must hold no absolute addresses. */
const char *rtos_hm_event_name(unsigned int event)
{
	switch (event) {
	case PARTITA_HM_EV_STAGE2_FAULT: return "stage2-fault";
	case PARTITA_HM_EV_FORBIDDEN: return "forbidden";
	case PARTITA_HM_EV_ILLEGAL_HYPERCALL: return "illegal-hypercall";
	case PARTITA_HM_EV_WATCHDOG: return "watchdog";
	case PARTITA_HM_EV_BUDGET_OVERRUN: return "budget-overrun";
	case PARTITA_HM_EV_REPORTED: return "reported";
	default: return "?";
	}
}

const char *rtos_hm_action_name(unsigned int action)
{
	switch (action) {
	case PARTITA_HM_ACT_IGNORE: return "ignore";
	case PARTITA_HM_ACT_LOG: return "log";
	case PARTITA_HM_ACT_SUSPEND: return "suspend";
	case PARTITA_HM_ACT_RESTART: return "restart";
	case PARTITA_HM_ACT_HALT: return "halt";
	case PARTITA_HM_ACT_RESET_SYSTEM: return "reset-system";
	case PARTITA_HM_ACT_INJECT: return "inject";
	default: return "?";
	}
}

long rtos_tio_write_at(uint8_t pins, uint8_t values, uint64_t at)
{
	return rtos_tio_periodic(pins, values, at, 0);
}

long rtos_tio_periodic(uint8_t pins, uint8_t values, uint64_t first, uint64_t period)
{
	return hypercall(PARTITA_TIO_WRITE_AT, pins, values, first, period).status;
}

long rtos_tio_cancel(uint8_t pins, uint32_t *dropped)
{
	struct partita_result r = hypercall(PARTITA_TIO_CANCEL, pins, 0, 0, 0);

	if (r.status == PARTITA_OK && dropped)
		*dropped = (uint32_t)r.value;
	return r.status;
}

long rtos_tio_stats(struct rtos_tio_stats *stats)
{
	struct partita_result r;

	if (!stats)
		return PARTITA_EINVAL;
	r = hypercall(PARTITA_TIO_STATS, 0, 0, 0, 0);
	if (r.status == PARTITA_OK) {
		stats->done = r.value;
		stats->max_error = r.value2;
		stats->sum_error = r.value3;
	}
	return r.status;
}

const char *rtos_partita_status_name(long status)
{
	switch (status) {
	case PARTITA_OK: return "OK";
	case PARTITA_ENOTSUPPORTED: return "ENOTSUPPORTED";
	case PARTITA_EINVAL: return "EINVAL";
	case PARTITA_EDENIED: return "EDENIED";
	case PARTITA_ESTATE: return "ESTATE";
	case PARTITA_EBUSY: return "EBUSY";
	case PARTITA_EFULL: return "EFULL";
	case PARTITA_EEMPTY: return "EEMPTY";
	case PARTITA_ETOOLONG: return "ETOOLONG";
	case PARTITA_ESMALL: return "ESMALL";
	case PARTITA_ETIMEOUT: return "ETIMEOUT";
	case PARTITA_EFAULT: return "EFAULT";
	case PARTITA_ELATE: return "ELATE";
	case PARTITA_ETOOFAR: return "ETOOFAR";
	case RTOS_ACCEL_EDMA: return "ACCEL_EDMA";
	case RTOS_ACCEL_ECMD: return "ACCEL_ECMD";
	default: return "?";
	}
}
