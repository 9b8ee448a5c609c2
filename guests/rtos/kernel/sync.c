/*
 * Semaphores, queues and pools with waiting. A waker hands its resource
 * straight to the most urgent waiter (a count, a message, a block) instead
 * of putting it back for anyone to grab, so a woken task never finds it gone
 * and never has to loop.
 */
#include "port.h"

/* Whether a call that found nothing should fail now rather than wait. */
static rtos_status cannot_wait(uint32_t timeout, rtos_status fail)
{
	if (timeout == RTOS_NO_WAIT)
		return fail;
	if (sched_in_isr() || !sched_started())
		return RTOS_ESTATE;
	return RTOS_OK;
}

rtos_status rtos_sem_init(rtos_sem_t *sem, uint32_t initial)
{
	return sem_setup(sem, initial);
}

rtos_status rtos_sem_take(rtos_sem_t *sem, uint32_t timeout)
{
	rtos_status s;
	bool was;

	if (!sem)
		return RTOS_EINVAL;
	was = rtos_irq_disable();
	s = sem_try_take(sem);
	if (s == RTOS_EEMPTY) {
		s = cannot_wait(timeout, RTOS_EEMPTY);
		if (s == RTOS_OK)
			s = sched_block(&sem->waiters, timeout);
	}
	rtos_irq_restore(was);
	return s;
}

rtos_status rtos_sem_give(rtos_sem_t *sem)
{
	struct rtos_task *t;
	rtos_status s = RTOS_OK;
	bool was;

	if (!sem)
		return RTOS_EINVAL;
	was = rtos_irq_disable();
	t = wl_first(&sem->waiters);
	if (t) {
		sched_wake(t, RTOS_OK);
		sched_reschedule();
	} else {
		s = sem_try_give(sem);
	}
	rtos_irq_restore(was);
	return s;
}

rtos_status rtos_queue_init(rtos_queue_t *q, void *buffer, uint32_t msg_size, uint32_t capacity)
{
	return queue_setup(q, buffer, msg_size, capacity);
}

/* A receiver waits only while the queue is empty: give it the message directly. */
static bool send_to_receiver(rtos_queue_t *q, const void *msg)
{
	struct rtos_task *t = wl_first(&q->receivers);

	if (!t)
		return false;
	msg_copy(t->xfer, msg, q->msg_size);
	sched_wake(t, RTOS_OK);
	return true;
}

rtos_status rtos_queue_send(rtos_queue_t *q, const void *msg, uint32_t timeout)
{
	rtos_status s = RTOS_OK;
	bool was;

	if (!q || !msg)
		return RTOS_EINVAL;
	was = rtos_irq_disable();
	if (send_to_receiver(q, msg)) {
		sched_reschedule();
	} else if (queue_try_send(q, msg) != RTOS_OK) {
		s = cannot_wait(timeout, RTOS_EFULL);
		if (s == RTOS_OK) {
			sched_current()->xfer = (void *)msg;
			s = sched_block(&q->senders, timeout);
		}
	}
	rtos_irq_restore(was);
	return s;
}

/* A slot just opened: the most urgent waiting sender's message fills it. */
static void refill_from_sender(rtos_queue_t *q)
{
	struct rtos_task *t = wl_first(&q->senders);

	if (!t)
		return;
	queue_try_send(q, t->xfer);
	sched_wake(t, RTOS_OK);
	sched_reschedule();
}

rtos_status rtos_queue_receive(rtos_queue_t *q, void *msg, uint32_t timeout)
{
	rtos_status s;
	bool was;

	if (!q || !msg)
		return RTOS_EINVAL;
	was = rtos_irq_disable();
	s = queue_try_receive(q, msg);
	if (s == RTOS_OK) {
		refill_from_sender(q);
	} else {
		s = cannot_wait(timeout, RTOS_EEMPTY);
		if (s == RTOS_OK) {
			sched_current()->xfer = msg;
			s = sched_block(&q->receivers, timeout);
		}
	}
	rtos_irq_restore(was);
	return s;
}

rtos_status rtos_pool_init(rtos_pool_t *pool, void *area, uint32_t block_size, uint32_t blocks)
{
	return pool_setup(pool, area, block_size, blocks);
}

rtos_status rtos_pool_alloc(rtos_pool_t *pool, void **block, uint32_t timeout)
{
	rtos_status s;
	bool was;

	if (!pool || !block)
		return RTOS_EINVAL;
	was = rtos_irq_disable();
	s = pool_try_alloc(pool, block);
	if (s == RTOS_EEMPTY) {
		s = cannot_wait(timeout, RTOS_EEMPTY);
		if (s == RTOS_OK) {
			s = sched_block(&pool->waiters, timeout);
			if (s == RTOS_OK)
				*block = sched_current()->xfer;
		}
	}
	rtos_irq_restore(was);
	return s;
}

rtos_status rtos_pool_free(rtos_pool_t *pool, void *block)
{
	struct rtos_task *t;
	rtos_status s;
	bool was;

	if (!pool || !block)
		return RTOS_EINVAL;
	was = rtos_irq_disable();
	s = pool_check(pool, block);
	t = wl_first(&pool->waiters);
	if (s == RTOS_OK && t) {
		t->xfer = block;
		sched_wake(t, RTOS_OK);
		sched_reschedule();
	} else if (s == RTOS_OK) {
		s = pool_try_free(pool, block);
	}
	rtos_irq_restore(was);
	return s;
}
