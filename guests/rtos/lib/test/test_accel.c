/*
 * Host tests of the guest-aware accelerator calls (../accel.c), built
 * with -DHOST_TEST: rtos_accel_find on a tree dtc built from accel.dts,
 * and acquire and run against a fake fabric that answers
 * PARTITA_ACC_REQUEST, raises the signals through the attached ISR and
 * changes an interface page in host memory, one step each time the task
 * blocks. The fake RTOS's semaphore counts for real; a blocked take is
 * where time passes.
 *   make -C guests/rtos host-test   (runs these with the kernel's tests)
 */
#include <stdio.h>
#include <string.h>
#include "rtos_partita.h"
#include "harness.h"

#include "boot_tree.h"

#define FIRST_SPI	32

static uint8_t page[4096] __attribute__((aligned(4096)));
static struct rtos_accel acc;

/* ---- The fake RTOS ---- */

static uint64_t ticks, counter;
static bool in_isr;
static unsigned blocks;			/* takes that blocked */
static uint32_t last_slice;

struct attached {
	uint32_t intid;
	uint8_t prio;
	rtos_isr isr;
	void *arg;
};
static struct attached irqs[4];
static unsigned nirqs;
static rtos_status irq_result;

static void fabric_step(void);

uint64_t rtos_ticks(void)
{
	return ticks;
}

uint64_t rtos_counter(void)
{
	return counter += 7;
}

rtos_status rtos_irq_attach(uint32_t intid, uint8_t priority, rtos_isr isr, void *arg)
{
	if (irq_result == RTOS_OK && nirqs < 4)
		irqs[nirqs++] = (struct attached){ intid, priority, isr, arg };
	return irq_result;
}

rtos_status rtos_sem_init(rtos_sem_t *sem, uint32_t initial)
{
	memset(sem, 0, sizeof(*sem));
	sem->count = initial;
	return RTOS_OK;
}

rtos_status rtos_sem_give(rtos_sem_t *sem)
{
	sem->count++;
	return RTOS_OK;
}

/* Blocking is where the fabric moves: one step, then a signal or a tick gone by. */
rtos_status rtos_sem_take(rtos_sem_t *sem, uint32_t timeout)
{
	if (sem->count == 0 && timeout != RTOS_NO_WAIT) {
		if (in_isr)
			return RTOS_ESTATE;
		blocks++;
		last_slice = timeout;
		fabric_step();
		if (sem->count == 0) {
			ticks += timeout;
			return RTOS_ETIMEOUT;
		}
	}
	if (sem->count == 0)
		return RTOS_EEMPTY;
	sem->count--;
	return RTOS_OK;
}

/* ---- The fake fabric ---- */

static struct {
	long status;		/* what a request answers in x0 */
	bool connected;
	unsigned requests;
	int connect_in;		/* steps until a waiting request connects; <0 never */
	bool waiting;		/* a request is queued */
	int take_in;		/* steps until START is taken */
	int done_in;		/* steps from taking START to OVER; <0 never */
	uint32_t error;		/* STAT error bit set on taking START instead */
	bool stale_error;	/* an earlier job's error clears a step after START is taken */
	bool taken;		/* START was taken */
	int preempt_at;		/* the job's step at which the device is taken away; <0 never */
	int expire_at;		/* a step at which the device is taken without a stop; <0 never */
	int step;
	uint64_t frames;
} fab;

static uint32_t page32(uint32_t off)
{
	uint32_t v;

	memcpy(&v, page + off, 4);
	return v;
}

static void set32(uint32_t off, uint32_t v)
{
	memcpy(page + off, &v, 4);
}

static void stat_set(uint32_t set, uint32_t clear)
{
	set32(PARTITA_ACC_STAT, (page32(PARTITA_ACC_STAT) | set) & ~clear);
}

/* The ISR, as the RTOS would run it for the signal at this device's INTID. */
static void fire(uint32_t intid)
{
	bool was = in_isr;
	unsigned i;

	for (i = 0; i < nirqs; i++) {
		if (irqs[i].intid == intid) {
			in_isr = true;
			irqs[i].isr(intid, irqs[i].arg);
			in_isr = was;
		}
	}
}

/* Connected, with READY, as every connection is signalled; preempted work goes on. */
static void connect(void)
{
	uint32_t resumed = page32(PARTITA_ACC_STAT) & PARTITA_ACC_STAT_PREEMPTED ? PARTITA_ACC_STAT_BUSY : 0;

	fab.connected = true;
	fab.waiting = false;
	stat_set(PARTITA_ACC_STAT_CONNECTED | resumed, PARTITA_ACC_STAT_WAITING | PARTITA_ACC_STAT_PREEMPTED);
	fire(acc.intid_ready);
}

static void disconnect(bool preempted)
{
	fab.connected = false;
	stat_set(preempted ? PARTITA_ACC_STAT_PREEMPTED : 0, PARTITA_ACC_STAT_CONNECTED | PARTITA_ACC_STAT_BUSY);
	if (preempted) {
		fab.waiting = true;
		fab.connect_in = 2;
		fire(acc.intid_preempt);
	}
}

struct partita_result test_hypercall(unsigned long fn, unsigned long a1, unsigned long a2,
				     unsigned long a3, unsigned long a4);

struct partita_result test_hypercall(unsigned long fn, unsigned long a1, unsigned long a2,
				     unsigned long a3, unsigned long a4)
{
	(void)a2;
	(void)a3;
	(void)a4;
	if (fn != PARTITA_ACC_REQUEST || a1 != acc.device)
		return (struct partita_result){ PARTITA_EINVAL, 0, 0, 0 };
	fab.requests++;
	if (fab.status != PARTITA_OK)
		return (struct partita_result){ fab.status, 0, 0, 0 };
	if (!fab.connected && !fab.waiting) {
		if (fab.connect_in == 0) {
			connect();
		} else {
			fab.waiting = true;
			stat_set(PARTITA_ACC_STAT_WAITING, 0);
			fire(acc.intid_wait);
		}
	}
	return (struct partita_result){ PARTITA_OK, fab.connected, 0, 0 };
}

/* One step of the fabric: connect, take START, compute, stop, finish. */
static void fabric_step(void)
{
	int step = fab.step++;

	if (fab.expire_at == step && fab.connected) {
		/* Its hold expired and the next client took it: no stop, no signal. */
		disconnect(false);
		return;
	}
	if (!fab.connected) {
		if (fab.waiting && fab.connect_in > 0 && --fab.connect_in == 0)
			connect();
		return;
	}
	if (page[PARTITA_ACC_START]) {
		if (fab.take_in > 0) {
			fab.take_in--;
			return;
		}
		page[PARTITA_ACC_START] = 0;
		fab.taken = true;
		if (fab.error)
			stat_set(fab.error, 0);
		else if (!fab.stale_error)
			stat_set(PARTITA_ACC_STAT_BUSY, PARTITA_ACC_STAT_ERR_CMD | PARTITA_ACC_STAT_ERR_DMA);
		/* Else the moment between taking START and clearing the last job's error. */
		return;
	}
	if (fab.stale_error && fab.taken) {
		fab.stale_error = false;
		stat_set(PARTITA_ACC_STAT_BUSY, PARTITA_ACC_STAT_ERR_CMD | PARTITA_ACC_STAT_ERR_DMA);
		return;
	}
	if (!(page32(PARTITA_ACC_STAT) & PARTITA_ACC_STAT_BUSY))
		return;
	if (fab.preempt_at >= 0 && fab.preempt_at-- == 0) {
		disconnect(true);
		return;
	}
	if (fab.done_in >= 0 && fab.done_in-- == 0) {
		stat_set(0, PARTITA_ACC_STAT_BUSY);
		set32(PARTITA_ACC_RESULT, (uint32_t)fab.frames);
		page[PARTITA_ACC_OVER] = 1;
		if (page32(PARTITA_ACC_INT_CTRL) & 1)
			fire(acc.intid_ready);
	}
}

/* ---- Set-up ---- */

static void reset(void)
{
	ticks = 1000;
	counter = 0;
	in_isr = false;
	blocks = 0;
	last_slice = 0;
	nirqs = 0;
	irq_result = RTOS_OK;
	memset(page, 0, sizeof(page));
	memset(&fab, 0, sizeof(fab));
	fab.preempt_at = fab.expire_at = -1;
	fab.frames = 3;
	fab.done_in = 0;
	memset(&acc, 0, sizeof(acc));
}

/* The qam16 device of accel.dts, its page moved into host memory. */
static bool ready_device(void)
{
	if (!load(ACCEL_DTB) || rtos_accel_find(&acc, "qam16") != PARTITA_OK)
		return false;
	acc.page = (uint64_t)(uintptr_t)page;
	return true;
}

/* ---- rtos_accel_find ---- */

static void find_reads_the_device(void)
{
	EXPECT(load(ACCEL_DTB));
	EXPECT(rtos_accel_find(&acc, "qam16") == PARTITA_OK);
	/* The first qam16 in the partition's order. */
	EXPECT(acc.page == 0x0b000000 && acc.device == 0 && acc.function == RTOS_ACCEL_QAM16);
	EXPECT(acc.intid_wait == 0x30 + FIRST_SPI && acc.intid_ready == 0x31 + FIRST_SPI);
	EXPECT(acc.intid_preempt == 0x32 + FIRST_SPI);
	EXPECT(nirqs == 3 && irqs[0].intid == acc.intid_wait && irqs[1].intid == acc.intid_ready);
	EXPECT(irqs[2].intid == acc.intid_preempt && irqs[0].prio == RTOS_ACCEL_IRQ_PRIO);
	EXPECT(irqs[0].arg == &acc && acc.signal.count == 0 && acc.waits == 0);
}

static void find_maps_signals_by_name(void)
{
	EXPECT(load(ACCEL_DTB));
	EXPECT(rtos_accel_find(&acc, "qam64") == PARTITA_OK);
	EXPECT(acc.page == 0x110001000ull && acc.device == 1 && acc.function == RTOS_ACCEL_QAM64);
	EXPECT(acc.intid_ready == 0x40 + FIRST_SPI && acc.intid_preempt == 0x41 + FIRST_SPI);
	EXPECT(acc.intid_wait == 0x42 + FIRST_SPI);
}

static void find_refuses(void)
{
	EXPECT(load(ACCEL_DTB));
	/* Only partita,accelerator nodes count. */
	EXPECT(rtos_accel_find(&acc, "fft512") == PARTITA_EINVAL);
	EXPECT(rtos_accel_find(&acc, "qam") == PARTITA_EINVAL);
	EXPECT(rtos_accel_find(&acc, "") == PARTITA_EINVAL);
	EXPECT(rtos_accel_find(&acc, NULL) == PARTITA_EINVAL);
	EXPECT(rtos_accel_find(NULL, "qam16") == PARTITA_EINVAL);
	/* Without its index the device cannot be asked for. */
	EXPECT(rtos_accel_find(&acc, "fft1024") == PARTITA_ESTATE);
	EXPECT(nirqs == 0);
	/* Interrupts refused: before rtos_init. */
	irq_result = RTOS_ESTATE;
	EXPECT(rtos_accel_find(&acc, "qam16") == PARTITA_ESTATE);
	/* Not on Partita, or no tree at all. */
	irq_result = RTOS_OK;
	EXPECT(load(NATIVE_DTB));
	EXPECT(rtos_accel_find(&acc, "qam16") == PARTITA_ESTATE);
	memset(blob, 0xa5, sizeof(blob));
	EXPECT(rtos_accel_find(&acc, "qam16") == PARTITA_ESTATE);
}

/* ---- rtos_accel_acquire ---- */

static void acquire_connected_at_once(void)
{
	EXPECT(ready_device());
	EXPECT(rtos_accel_acquire(&acc, 10) == PARTITA_OK);
	EXPECT(fab.requests == 1 && blocks == 0 && acc.waits == 0 && acc.readies == 1);
	/* Connected already: asking again is all it takes. */
	EXPECT(rtos_accel_acquire(&acc, RTOS_NO_WAIT) == PARTITA_OK);
	EXPECT(fab.requests == 2 && blocks == 0);
}

static void acquire_sleeps_until_ready(void)
{
	EXPECT(ready_device());
	fab.connect_in = 3;
	/* A READY left from before is drained, not taken for this one. */
	acc.signal.count = 2;
	EXPECT(rtos_accel_acquire(&acc, RTOS_WAIT_FOREVER) == PARTITA_OK);
	EXPECT(acc.waits == 1 && acc.readies == 1 && blocks == 3 && fab.connected);
	/* Polled once a tick; asked again at each poll, answered as one request. */
	EXPECT(last_slice == 1 && fab.requests == 3 && acc.signal.count == 0);
	EXPECT(acc.waited > 0);
}

static void acquire_times_out(void)
{
	EXPECT(ready_device());
	fab.connect_in = -1;
	EXPECT(rtos_accel_acquire(&acc, 5) == PARTITA_ETIMEOUT);
	EXPECT(blocks == 5 && ticks == 1005 && acc.waits == 1);
	blocks = 0;
	EXPECT(rtos_accel_acquire(&acc, RTOS_NO_WAIT) == PARTITA_ETIMEOUT);
	EXPECT(blocks == 0);
}

static void acquire_refuses(void)
{
	EXPECT(ready_device());
	fab.status = PARTITA_EINVAL;
	EXPECT(rtos_accel_acquire(&acc, 10) == PARTITA_EINVAL);
	EXPECT(rtos_accel_acquire(NULL, 10) == PARTITA_EINVAL);
	/* Where no task can block. */
	fab.status = PARTITA_OK;
	fab.connect_in = 2;
	in_isr = true;
	EXPECT(rtos_accel_acquire(&acc, 10) == PARTITA_ESTATE);
}

/* ---- rtos_accel_run ---- */

static uint8_t in[64], out[256];

static void run_programs_a_job(void)
{
	uint64_t data;

	EXPECT(ready_device());
	page[PARTITA_ACC_OVER] = 1;	/* the last job's */
	EXPECT(rtos_accel_run(&acc, in, 39, out, 240, 7, 100) == 3);
	memcpy(&data, page + PARTITA_ACC_DATA_ADDR, 8);
	EXPECT(data == (uint64_t)(uintptr_t)in && page32(PARTITA_ACC_DATA_SIZE) == 39);
	EXPECT(page32(PARTITA_ACC_OUT_ADDR_LO) == (uint32_t)(uintptr_t)out);
	EXPECT(page32(PARTITA_ACC_OUT_ADDR_HI) == (uint32_t)((uint64_t)(uintptr_t)out >> 32));
	EXPECT(page32(PARTITA_ACC_OUT_SIZE) == 240 && page32(PARTITA_ACC_CMD) == 7);
	EXPECT(page32(PARTITA_ACC_INT_CTRL) == 1);
	/* Taken, then over: a sleep each, the second ended by READY (the first READY: connected). */
	EXPECT(blocks == 2 && acc.readies == 2 && acc.preempts == 0 && acc.signal.count == 0);
	EXPECT(rtos_accel_run(NULL, in, 39, out, 240, 0, 100) == PARTITA_EINVAL);
	EXPECT(rtos_accel_run(&acc, NULL, 39, out, 240, 0, 100) == PARTITA_EINVAL);
	EXPECT(rtos_accel_run(&acc, in, 39, NULL, 240, 0, 100) == PARTITA_EINVAL);
}

static void run_waits_through_a_preemption(void)
{
	EXPECT(ready_device());
	fab.connect_in = 1;
	fab.preempt_at = 0;
	EXPECT(rtos_accel_run(&acc, in, 39, out, 240, 0, RTOS_WAIT_FOREVER) == 3);
	/* READY to connect, PREEMPT, READY to resume, READY at the end. */
	EXPECT(acc.waits == 1 && acc.preempts == 1 && acc.readies == 3);
	EXPECT(fab.connected && page[PARTITA_ACC_OVER] == 1);
}

static void run_reports_errors(void)
{
	EXPECT(ready_device());
	fab.error = PARTITA_ACC_STAT_ERR_DMA;
	EXPECT(rtos_accel_run(&acc, in, 39, out, 240, 0, 100) == RTOS_ACCEL_EDMA);
	/* Believed at the second look, a poll later. */
	EXPECT(blocks == 2);
	reset();
	EXPECT(ready_device());
	fab.error = PARTITA_ACC_STAT_ERR_CMD;
	EXPECT(rtos_accel_run(&acc, in, 39, out, 240, 0, 100) == RTOS_ACCEL_ECMD);
}

static void run_ignores_an_earlier_job_s_error(void)
{
	EXPECT(ready_device());
	stat_set(PARTITA_ACC_STAT_ERR_CMD, 0);
	fab.stale_error = true;
	EXPECT(rtos_accel_run(&acc, in, 39, out, 240, 0, 100) == 3);
	EXPECT(!(page32(PARTITA_ACC_STAT) & PARTITA_ACC_STAT_ERR_CMD));
}

static void run_asks_again_when_taken_before_start(void)
{
	EXPECT(ready_device());
	fab.take_in = 1;
	fab.expire_at = 0;
	EXPECT(rtos_accel_run(&acc, in, 39, out, 240, 0, 100) == 3);
	/* Once to acquire, once more once taken away (and queued, then served). */
	EXPECT(fab.requests >= 2 && acc.preempts == 0 && acc.readies >= 2);
}

static void run_times_out(void)
{
	EXPECT(ready_device());
	fab.done_in = -1;
	EXPECT(rtos_accel_run(&acc, in, 39, out, 240, 0, 10) == PARTITA_ETIMEOUT);
	EXPECT(ticks == 1010);
	/* Acquire's own timeout, not a job's. */
	reset();
	EXPECT(ready_device());
	fab.connect_in = -1;
	EXPECT(rtos_accel_run(&acc, in, 39, out, 240, 0, 3) == PARTITA_ETIMEOUT);
	EXPECT(page[PARTITA_ACC_START] == 0 && page32(PARTITA_ACC_DATA_SIZE) == 0);
}

/* ---- Frames ---- */

static void frame_bytes_follow_the_interface(void)
{
	uint32_t i = 0, o = 0;

	EXPECT(rtos_accel_frame_bytes(RTOS_ACCEL_QAM16, 0, &i, &o) == PARTITA_OK && i == 2350 && o == 18800);
	EXPECT(rtos_accel_frame_bytes(RTOS_ACCEL_QAM64, 0, &i, &o) == PARTITA_OK && i == 2350 && o == 12532);
	EXPECT(rtos_accel_frame_bytes(RTOS_ACCEL_QAM16, 100, &i, &o) == PARTITA_OK && i == 13 && o == 100);
	/* 4,700 samples: ten blocks of 512, five of 1024, the last zero-padded. */
	EXPECT(rtos_accel_frame_bytes(RTOS_ACCEL_FFT512, 0, &i, &o) == PARTITA_OK && i == 18800 && o == 20480);
	EXPECT(rtos_accel_frame_bytes(RTOS_ACCEL_FFT1024, 0, &i, &o) == PARTITA_OK && i == 18800 && o == 20480);
	EXPECT(rtos_accel_frame_bytes(RTOS_ACCEL_FFT1024, 1024, &i, &o) == PARTITA_OK && o == 4096);
	EXPECT(rtos_accel_frame_bytes(RTOS_ACCEL_FFT512, 0xffffffffu, &i, &o) == PARTITA_EINVAL);
	EXPECT(rtos_accel_frame_bytes(RTOS_ACCEL_UNKNOWN, 0, &i, &o) == PARTITA_EINVAL);
	EXPECT(rtos_accel_frame_bytes(RTOS_ACCEL_QAM16, 0, NULL, &o) == PARTITA_EINVAL);
}

static const struct test tests[] = {
	TEST(find_reads_the_device),
	TEST(find_maps_signals_by_name),
	TEST(find_refuses),
	TEST(acquire_connected_at_once),
	TEST(acquire_sleeps_until_ready),
	TEST(acquire_times_out),
	TEST(acquire_refuses),
	TEST(run_programs_a_job),
	TEST(run_waits_through_a_preemption),
	TEST(run_reports_errors),
	TEST(run_ignores_an_earlier_job_s_error),
	TEST(run_asks_again_when_taken_before_start),
	TEST(run_times_out),
	TEST(frame_bytes_follow_the_interface),
};

int main(void)
{
	return run_tests(tests, sizeof(tests) / sizeof(tests[0]), "accel ", "accelerators: ", reset);
}
