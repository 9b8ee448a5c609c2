/*
 * The kernel's own view of tasks and kernel objects. This header and the
 * files that include only it (readyq.c, objects.c) hold no assembly and no
 * system registers, so the host unit tests compile them unchanged.
 */
#ifndef KERNEL_H
#define KERNEL_H

#include "rtos.h"

enum task_state {
	TASK_FREE = 0,		/* slot unused */
	TASK_READY,		/* in the ready queue (the running task too) */
	TASK_BLOCKED,		/* on a wait list, maybe with a timeout */
	TASK_SLEEPING,		/* only on the timeout list */
	TASK_SUSPENDED,
};

struct rtos_task {
	uint64_t sp;			/* first: the switch code saves it here */
	/* Links in the ready queue or in one wait list (circular). */
	struct rtos_task *next, *prev;
	/* Links in the timeout list, sorted by wake_at. */
	struct rtos_task *tnext, *tprev;
	struct rtos_wait_list *wait;	/* the list it is blocked on */
	uint64_t wake_at;		/* tick at which the timeout ends */
	uint64_t dispatched_at;		/* tick at which it last got the CPU */
	/* What a waker hands over: the message or buffer, or a pool block. */
	void *xfer;
	uint64_t stack_lo, stack_hi;	/* its stack, [lo, hi) */
	const char *name;
	rtos_entry entry;
	void *arg;
	uint32_t prio;			/* RTOS_PRIORITIES for the idle task */
	uint8_t state;
	bool timed;			/* on the timeout list */
	rtos_status result;		/* why a blocked task was woken */
};

/* ---- Per-priority FIFOs with a bitmap (readyq.c) ---- */
void wl_init(struct rtos_wait_list *wl);
/* Appends t at the tail of its priority's FIFO. */
void wl_push(struct rtos_wait_list *wl, struct rtos_task *t);
void wl_remove(struct rtos_wait_list *wl, struct rtos_task *t);
/* The head of the most urgent non-empty FIFO, or NULL: O(1) by the bitmap. */
struct rtos_task *wl_first(const struct rtos_wait_list *wl);
/* The same answer by scanning the priorities one by one. */
struct rtos_task *wl_first_linear(const struct rtos_wait_list *wl);
/* Moves the head of priority prio's FIFO to its tail. */
void wl_rotate(struct rtos_wait_list *wl, uint32_t prio);
bool wl_empty(const struct rtos_wait_list *wl);

/* ---- Object state without any waiting (objects.c) ---- */
rtos_status sem_setup(rtos_sem_t *sem, uint32_t initial);
rtos_status sem_try_take(rtos_sem_t *sem);
rtos_status sem_try_give(rtos_sem_t *sem);

rtos_status queue_setup(rtos_queue_t *q, void *buffer, uint32_t msg_size, uint32_t capacity);
rtos_status queue_try_send(rtos_queue_t *q, const void *msg);
rtos_status queue_try_receive(rtos_queue_t *q, void *msg);
void msg_copy(void *dst, const void *src, uint32_t size);

rtos_status pool_setup(rtos_pool_t *pool, void *area, uint32_t block_size, uint32_t blocks);
rtos_status pool_try_alloc(rtos_pool_t *pool, void **block);
/* RTOS_EINVAL unless block is one of pool's blocks and not already free. */
rtos_status pool_check(const rtos_pool_t *pool, const void *block);
rtos_status pool_try_free(rtos_pool_t *pool, void *block);

#endif
