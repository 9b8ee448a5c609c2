/*
 * The state of semaphores, queues and pools on their own: what a call does
 * when it does not have to wait. The blocking layer (sync.c) decides who
 * waits and who is woken; everything here is plain C for the host tests.
 */
#include "kernel.h"

rtos_status sem_setup(rtos_sem_t *sem, uint32_t initial)
{
	if (!sem)
		return RTOS_EINVAL;
	sem->count = initial;
	wl_init(&sem->waiters);
	return RTOS_OK;
}

rtos_status sem_try_take(rtos_sem_t *sem)
{
	if (sem->count == 0)
		return RTOS_EEMPTY;
	sem->count--;
	return RTOS_OK;
}

/* A count that would wrap is refused rather than silently reset to 0. */
rtos_status sem_try_give(rtos_sem_t *sem)
{
	if (sem->count == UINT32_MAX)
		return RTOS_EFULL;
	sem->count++;
	return RTOS_OK;
}

/*
 * Word copies when both ends and the size allow: with the MMU off every data
 * access is a Device access, so a byte loop costs eight times as many.
 */
void msg_copy(void *dst, const void *src, uint32_t size)
{
	uintptr_t all = (uintptr_t)dst | (uintptr_t)src | size;
	uint32_t i;

	if ((all & 7) == 0) {
		for (i = 0; i < size / 8; i++)
			((uint64_t *)dst)[i] = ((const uint64_t *)src)[i];
	} else if ((all & 3) == 0) {
		for (i = 0; i < size / 4; i++)
			((uint32_t *)dst)[i] = ((const uint32_t *)src)[i];
	} else {
		for (i = 0; i < size; i++)
			((uint8_t *)dst)[i] = ((const uint8_t *)src)[i];
	}
}

rtos_status queue_setup(rtos_queue_t *q, void *buffer, uint32_t msg_size, uint32_t capacity)
{
	if (!q || !buffer || msg_size == 0 || capacity == 0 ||
	    (uint64_t)msg_size * capacity > UINT32_MAX)
		return RTOS_EINVAL;
	q->buffer = buffer;
	q->msg_size = msg_size;
	q->capacity = capacity;
	q->head = 0;
	q->count = 0;
	wl_init(&q->senders);
	wl_init(&q->receivers);
	return RTOS_OK;
}

rtos_status queue_try_send(rtos_queue_t *q, const void *msg)
{
	uint32_t slot;

	if (q->count == q->capacity)
		return RTOS_EFULL;
	slot = q->head + q->count;
	if (slot >= q->capacity)
		slot -= q->capacity;
	msg_copy(q->buffer + (size_t)slot * q->msg_size, msg, q->msg_size);
	q->count++;
	return RTOS_OK;
}

rtos_status queue_try_receive(rtos_queue_t *q, void *msg)
{
	if (q->count == 0)
		return RTOS_EEMPTY;
	msg_copy(msg, q->buffer + (size_t)q->head * q->msg_size, q->msg_size);
	if (++q->head == q->capacity)
		q->head = 0;
	q->count--;
	return RTOS_OK;
}

/*
 * A free block's first word links to the next free block, XORed with a key
 * of this pool. A block handed back to pool_try_free almost never holds a
 * word that decodes to a plausible link unless it is already free, so the
 * exact (linear) search of the free list is only needed in that rare case.
 */
static uintptr_t link_key(const rtos_pool_t *pool)
{
	return (uintptr_t)pool ^ (uintptr_t)0xa5c3f00d5a3c0ff1ull;
}

static bool is_block(const rtos_pool_t *pool, const void *p)
{
	uintptr_t a = (uintptr_t)p, base = (uintptr_t)pool->area;

	return a >= base && a - base < (uintptr_t)pool->block_size * pool->blocks &&
	       (a - base) % pool->block_size == 0;
}

static void *link_next(const rtos_pool_t *pool, const void *block)
{
	return (void *)(*(const uintptr_t *)block ^ link_key(pool));
}

static void link_set(const rtos_pool_t *pool, void *block, void *next)
{
	*(uintptr_t *)block = (uintptr_t)next ^ link_key(pool);
}

rtos_status pool_setup(rtos_pool_t *pool, void *area, uint32_t block_size, uint32_t blocks)
{
	uint32_t i, size;

	if (!pool || !area || block_size == 0 || blocks == 0 || ((uintptr_t)area & 7) ||
	    block_size > UINT32_MAX - 7)
		return RTOS_EINVAL;
	size = (block_size + 7) & ~7u;
	if ((uint64_t)size * blocks > UINT32_MAX)
		return RTOS_EINVAL;
	pool->area = area;
	pool->block_size = size;
	pool->blocks = blocks;
	pool->free = NULL;
	/* Built back to front so that blocks come out in address order. */
	for (i = blocks; i-- > 0;) {
		void *b = pool->area + (size_t)i * size;

		link_set(pool, b, pool->free);
		pool->free = b;
	}
	pool->free_count = blocks;
	wl_init(&pool->waiters);
	return RTOS_OK;
}

rtos_status pool_try_alloc(rtos_pool_t *pool, void **block)
{
	void *b = pool->free;

	if (!b)
		return RTOS_EEMPTY;
	pool->free = link_next(pool, b);
	pool->free_count--;
	*block = b;
	return RTOS_OK;
}

rtos_status pool_check(const rtos_pool_t *pool, const void *block)
{
	const void *next, *f;

	if (!is_block(pool, block))
		return RTOS_EINVAL;
	next = link_next(pool, block);
	if (next && !is_block(pool, next))
		return RTOS_OK;
	for (f = pool->free; f; f = link_next(pool, f))
		if (f == block)
			return RTOS_EINVAL;
	return RTOS_OK;
}

rtos_status pool_try_free(rtos_pool_t *pool, void *block)
{
	rtos_status s = pool_check(pool, block);

	if (s != RTOS_OK)
		return s;
	link_set(pool, block, pool->free);
	pool->free = block;
	pool->free_count++;
	return RTOS_OK;
}
