/*
 * Host unit tests of the kernel's pure parts (readyq.c, objects.c): built
 * with the host cc by `make -C guests/rtos host-test`. One line per test,
 * then "N passed, M failed"; the exit status is non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel.h"
#include "harness.h"

static void fill(uint8_t *m, uint32_t size, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < size; i++)
		m[i] = (uint8_t)(seed * 31 + i);
}

static bool same(const uint8_t *m, uint32_t size, uint32_t seed)
{
	uint8_t want[256];

	fill(want, size, seed);
	return memcmp(m, want, size) == 0;
}

static void queue_fifo_order(void)
{
	rtos_queue_t q;
	uint32_t buf[8][4], m[4], i;

	EXPECT(queue_setup(&q, buf, sizeof(m), 8) == RTOS_OK);
	for (i = 0; i < 8; i++) {
		fill((uint8_t *)m, sizeof(m), i);
		EXPECT(queue_try_send(&q, m) == RTOS_OK);
	}
	for (i = 0; i < 8; i++) {
		EXPECT(queue_try_receive(&q, m) == RTOS_OK);
		EXPECT(same((uint8_t *)m, sizeof(m), i));
	}
}

static void queue_full_and_empty(void)
{
	rtos_queue_t q;
	uint64_t buf[3], m = 42;

	EXPECT(queue_setup(&q, buf, 8, 3) == RTOS_OK);
	EXPECT(queue_try_receive(&q, &m) == RTOS_EEMPTY);
	EXPECT(queue_try_send(&q, &m) == RTOS_OK);
	EXPECT(queue_try_send(&q, &m) == RTOS_OK);
	EXPECT(queue_try_send(&q, &m) == RTOS_OK);
	EXPECT(queue_try_send(&q, &m) == RTOS_EFULL);
	EXPECT(q.count == 3);
	EXPECT(queue_try_receive(&q, &m) == RTOS_OK && m == 42);
	EXPECT(queue_try_send(&q, &m) == RTOS_OK);
	EXPECT(queue_try_send(&q, &m) == RTOS_EFULL);
}

/* Many more messages than slots, at every fill level: the ring wraps. */
static void queue_wraparound(void)
{
	rtos_queue_t q;
	uint32_t buf[5], in = 0, out = 0, v, round;

	EXPECT(queue_setup(&q, buf, 4, 5) == RTOS_OK);
	for (round = 0; round < 100; round++) {
		while (q.count < 1 + round % 5) {
			v = in++;
			EXPECT(queue_try_send(&q, &v) == RTOS_OK);
		}
		while (q.count > round % 3) {
			EXPECT(queue_try_receive(&q, &v) == RTOS_OK);
			EXPECT(v == out);
			out++;
		}
		EXPECT(q.head < q.capacity);
	}
	EXPECT(in > 200);
}

/* Odd sizes and misaligned buffers take the byte path, the others the word paths. */
static void queue_message_sizes(void)
{
	static const uint32_t sizes[] = { 1, 3, 4, 7, 8, 12, 16, 60, 64, 200 };
	uint8_t buf[4 * 200 + 1], msg[202], got[202];
	rtos_queue_t q;
	uint32_t i, k, off;

	for (off = 0; off < 2; off++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			uint32_t size = sizes[i];

			EXPECT(queue_setup(&q, buf + off, size, 4) == RTOS_OK);
			for (k = 0; k < 6; k++) {
				fill(msg + off, size, k + size);
				memset(got, 0, sizeof(got));
				EXPECT(queue_try_send(&q, msg + off) == RTOS_OK);
				EXPECT(queue_try_receive(&q, got + off) == RTOS_OK);
				EXPECT(same(got + off, size, k + size));
				EXPECT(got[off + size] == 0);
			}
		}
	}
}

static void queue_bad_arguments(void)
{
	rtos_queue_t q;
	uint8_t buf[16];

	EXPECT(queue_setup(NULL, buf, 4, 4) == RTOS_EINVAL);
	EXPECT(queue_setup(&q, NULL, 4, 4) == RTOS_EINVAL);
	EXPECT(queue_setup(&q, buf, 0, 4) == RTOS_EINVAL);
	EXPECT(queue_setup(&q, buf, 4, 0) == RTOS_EINVAL);
	EXPECT(queue_setup(&q, buf, 0x10000, 0x10000) == RTOS_EINVAL);
}

static void sem_counting(void)
{
	rtos_sem_t s;
	int i;

	EXPECT(sem_setup(&s, 3) == RTOS_OK);
	EXPECT(wl_empty(&s.waiters));
	for (i = 0; i < 3; i++)
		EXPECT(sem_try_take(&s) == RTOS_OK);
	EXPECT(sem_try_take(&s) == RTOS_EEMPTY);
	EXPECT(sem_try_give(&s) == RTOS_OK);
	EXPECT(sem_try_give(&s) == RTOS_OK);
	EXPECT(s.count == 2);
	EXPECT(sem_try_take(&s) == RTOS_OK);
	EXPECT(sem_try_take(&s) == RTOS_OK);
	EXPECT(sem_try_take(&s) == RTOS_EEMPTY);
	EXPECT(sem_setup(NULL, 0) == RTOS_EINVAL);
}

static void sem_no_wrap(void)
{
	rtos_sem_t s;

	EXPECT(sem_setup(&s, UINT32_MAX - 1) == RTOS_OK);
	EXPECT(sem_try_give(&s) == RTOS_OK);
	EXPECT(sem_try_give(&s) == RTOS_EFULL);
	EXPECT(s.count == UINT32_MAX);
}

static void pool_until_empty(void)
{
	uint64_t area[5 * 2];
	rtos_pool_t p;
	void *b[6];
	int i;

	EXPECT(pool_setup(&p, area, 13, 5) == RTOS_OK);
	EXPECT(p.block_size == 16 && p.free_count == 5);
	for (i = 0; i < 5; i++) {
		EXPECT(pool_try_alloc(&p, &b[i]) == RTOS_OK);
		EXPECT((uint8_t *)b[i] == (uint8_t *)area + 16 * i);
	}
	EXPECT(pool_try_alloc(&p, &b[5]) == RTOS_EEMPTY);
	EXPECT(p.free_count == 0);
	for (i = 0; i < 5; i++)
		EXPECT(pool_try_free(&p, b[i]) == RTOS_OK);
	EXPECT(p.free_count == 5);
	for (i = 0; i < 5; i++)
		EXPECT(pool_try_alloc(&p, &b[i]) == RTOS_OK);
	EXPECT(pool_try_alloc(&p, &b[5]) == RTOS_EEMPTY);
}

static void pool_double_free(void)
{
	uint64_t area[4];
	rtos_pool_t p;
	void *a, *b;

	EXPECT(pool_setup(&p, area, 8, 4) == RTOS_OK);
	EXPECT(pool_try_alloc(&p, &a) == RTOS_OK);
	EXPECT(pool_try_alloc(&p, &b) == RTOS_OK);
	EXPECT(pool_try_free(&p, a) == RTOS_OK);
	EXPECT(pool_try_free(&p, a) == RTOS_EINVAL);
	EXPECT(p.free_count == 3);
	/* The last free block links to NULL: it too must be caught. */
	EXPECT(pool_try_free(&p, (uint8_t *)area + 24) == RTOS_EINVAL);
	EXPECT(pool_try_free(&p, b) == RTOS_OK);
	EXPECT(p.free_count == 4);
}

/* An allocated block whose first word looks like a free link is still freeable. */
static void pool_lookalike_is_freed(void)
{
	uint64_t area[4];
	rtos_pool_t p;
	void *a, *b;

	EXPECT(pool_setup(&p, area, 8, 4) == RTOS_OK);
	EXPECT(pool_try_alloc(&p, &a) == RTOS_OK);
	EXPECT(pool_try_alloc(&p, &b) == RTOS_OK);
	*(uint64_t *)a = *(uint64_t *)((uint8_t *)area + 16);
	*(uint64_t *)b = *(uint64_t *)((uint8_t *)area + 24);
	EXPECT(pool_try_free(&p, a) == RTOS_OK);
	EXPECT(pool_try_free(&p, b) == RTOS_OK);
	EXPECT(p.free_count == 4);
}

static void pool_foreign_pointer(void)
{
	uint64_t area[8], other_area[8], local;
	rtos_pool_t p, other;
	void *a, *o;

	EXPECT(pool_setup(&p, area, 16, 4) == RTOS_OK);
	EXPECT(pool_setup(&other, other_area, 16, 4) == RTOS_OK);
	EXPECT(pool_try_alloc(&p, &a) == RTOS_OK);
	EXPECT(pool_try_alloc(&other, &o) == RTOS_OK);
	EXPECT(pool_try_free(&p, o) == RTOS_EINVAL);
	EXPECT(pool_try_free(&p, &local) == RTOS_EINVAL);
	EXPECT(pool_try_free(&p, (uint8_t *)a + 8) == RTOS_EINVAL);
	EXPECT(pool_try_free(&p, (uint8_t *)area + sizeof(area)) == RTOS_EINVAL);
	EXPECT(pool_try_free(&p, a) == RTOS_OK);
	EXPECT(pool_try_free(&other, o) == RTOS_OK);
}

static void pool_bad_arguments(void)
{
	uint64_t area[4];
	rtos_pool_t p;

	EXPECT(pool_setup(&p, area, 0, 4) == RTOS_EINVAL);
	EXPECT(pool_setup(&p, area, 8, 0) == RTOS_EINVAL);
	EXPECT(pool_setup(&p, NULL, 8, 4) == RTOS_EINVAL);
	EXPECT(pool_setup(&p, (uint8_t *)area + 4, 8, 3) == RTOS_EINVAL);
	EXPECT(pool_setup(NULL, area, 8, 4) == RTOS_EINVAL);
}

static struct rtos_task task_table[64];

static void waitlist_fifo_and_priority(void)
{
	struct rtos_wait_list wl;
	struct rtos_task *t = task_table;
	int i;

	wl_init(&wl);
	EXPECT(wl_first(&wl) == NULL && wl_first_linear(&wl) == NULL && wl_empty(&wl));
	for (i = 0; i < 6; i++) {
		t[i].prio = i < 3 ? 7 : 3;
		wl_push(&wl, &t[i]);
	}
	EXPECT(wl.bits == ((1u << 7) | (1u << 3)));
	/* Priority 3 first, each priority in arrival order. */
	for (i = 3; i < 6; i++) {
		EXPECT(wl_first(&wl) == &t[i]);
		wl_remove(&wl, &t[i]);
	}
	EXPECT(wl.bits == 1u << 7);
	wl_rotate(&wl, 7);
	EXPECT(wl_first(&wl) == &t[1]);
	wl_remove(&wl, &t[1]);
	EXPECT(wl_first(&wl) == &t[2]);
	wl_remove(&wl, &t[2]);
	EXPECT(wl_first(&wl) == &t[0]);
	wl_remove(&wl, &t[0]);
	EXPECT(wl_empty(&wl) && wl.head[7] == NULL);
}

/* Random pushes, removals and rotations: both lookups must always agree. */
static void readyq_bitmap_matches_linear(void)
{
	struct rtos_wait_list wl;
	bool queued[64] = { false };
	unsigned seed = 12345, step, i;

	wl_init(&wl);
	for (step = 0; step < 20000; step++) {
		seed = seed * 1103515245 + 12345;
		i = (seed >> 16) % 64;
		if (!queued[i]) {
			task_table[i].prio = (seed >> 8) % RTOS_PRIORITIES;
			wl_push(&wl, &task_table[i]);
			queued[i] = true;
		} else if ((seed >> 24) & 1) {
			wl_remove(&wl, &task_table[i]);
			queued[i] = false;
		} else {
			wl_rotate(&wl, task_table[i].prio);
		}
		EXPECT(wl_first(&wl) == wl_first_linear(&wl));
		if (wl_first(&wl))
			EXPECT((uint32_t)__builtin_ctz(wl.bits) == wl_first(&wl)->prio);
	}
}

/* All 32 priorities, including 31 (the top bit of the map). */
static void readyq_every_priority(void)
{
	struct rtos_wait_list wl;
	int p;

	wl_init(&wl);
	for (p = RTOS_PRIORITIES - 1; p >= 0; p--) {
		task_table[p].prio = (uint32_t)p;
		wl_push(&wl, &task_table[p]);
		EXPECT(wl_first(&wl) == &task_table[p]);
		EXPECT(wl_first_linear(&wl) == &task_table[p]);
	}
	EXPECT(wl.bits == 0xffffffffu);
	for (p = 0; p < RTOS_PRIORITIES; p++) {
		EXPECT(wl_first(&wl) == &task_table[p]);
		wl_remove(&wl, &task_table[p]);
	}
	EXPECT(wl_empty(&wl));
}


static const struct test tests[] = {
	TEST(queue_fifo_order),
	TEST(queue_full_and_empty),
	TEST(queue_wraparound),
	TEST(queue_message_sizes),
	TEST(queue_bad_arguments),
	TEST(sem_counting),
	TEST(sem_no_wrap),
	TEST(pool_until_empty),
	TEST(pool_double_free),
	TEST(pool_lookalike_is_freed),
	TEST(pool_foreign_pointer),
	TEST(pool_bad_arguments),
	TEST(waitlist_fifo_and_priority),
	TEST(readyq_bitmap_matches_linear),
	TEST(readyq_every_priority),
};

int main(void)
{
	return run_tests(tests, sizeof(tests) / sizeof(tests[0]), "", "", NULL);
}
