/*
 * The ready queue and every wait list are the same structure: one circular
 * FIFO per priority plus a bitmap of the non-empty ones, bit p for priority
 * p. Priority 0 is the most urgent, so the lowest set bit wins.
 */
#include "kernel.h"

void wl_init(struct rtos_wait_list *wl)
{
	uint32_t p;

	wl->bits = 0;
	for (p = 0; p < RTOS_PRIORITIES; p++)
		wl->head[p] = NULL;
}

void wl_push(struct rtos_wait_list *wl, struct rtos_task *t)
{
	struct rtos_task *head = wl->head[t->prio];

	if (!head) {
		t->next = t->prev = t;
		wl->head[t->prio] = t;
		wl->bits |= 1u << t->prio;
		return;
	}
	t->next = head;
	t->prev = head->prev;
	head->prev->next = t;
	head->prev = t;
}

void wl_remove(struct rtos_wait_list *wl, struct rtos_task *t)
{
	uint32_t p = t->prio;

	if (t->next == t) {
		wl->head[p] = NULL;
		wl->bits &= ~(1u << p);
	} else {
		t->prev->next = t->next;
		t->next->prev = t->prev;
		if (wl->head[p] == t)
			wl->head[p] = t->next;
	}
	t->next = t->prev = NULL;
}

struct rtos_task *wl_first(const struct rtos_wait_list *wl)
{
	if (!wl->bits)
		return NULL;
	return wl->head[__builtin_ctz(wl->bits)];
}

struct rtos_task *wl_first_linear(const struct rtos_wait_list *wl)
{
	uint32_t p;

	for (p = 0; p < RTOS_PRIORITIES; p++)
		if (wl->head[p])
			return wl->head[p];
	return NULL;
}

/* In a circular list the tail follows the head: rotating is one step. */
void wl_rotate(struct rtos_wait_list *wl, uint32_t prio)
{
	if (wl->head[prio])
		wl->head[prio] = wl->head[prio]->next;
}

bool wl_empty(const struct rtos_wait_list *wl)
{
	return wl->bits == 0;
}
