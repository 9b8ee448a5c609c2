/*
 * demo=1: the critical side of the mixed-criticality demo (configs/demo.toml).
 * Instead of the benchmarks, four tasks run for ever:
 *
 * - control (most urgent): a periodic PI controller of a simulated
 *   first-order plant, released every demo_period_ms on the tick grid. Its
 *   deadline is demo_deadline_us after its release; a job that ends later
 *   is a miss. Every demo_send_every-th job publishes its output on the
 *   shared-memory channel `telemetry` (the ring below), numbered.
 * - the timed output: at start, two periodic timed outputs (PARTITA_TIO_*)
 *   make a square wave of demo_tio_us on GPIO line 0, which Partita drives
 *   at the asked counter values whatever the pCPU is doing.
 * - accel: every demo_accel_ms, one QAM-16 frame on the partition's
 *   virtual accelerator, guest-aware (rtos_accel_run), checked against the
 *   same frame computed in software (guests/common/accel_sw.c).
 * - report: once a second, one line of counters for the host to parse.
 *
 * Lines (two a second, keys in this order, values decimal):
 *
 *   demo: t=S jobs=N misses=M resp_max_us=R late_max_us=L cpu_pct=C.CC busy_us=U
 *         sent=K full=F print_us=P
 *   demo: t=S tio_done=D tio_max=E tio_mean=A tio_err=X accel_jobs=J accel_bad=B
 *         accel_wait_max_us=W accel=qam16 accel_held=H counter_hz=F
 *
 * and, after them, one line per job that missed its deadline since the
 * previous report (at most LATE_KEPT a second; `dropped` counts the rest),
 * its window in counter ticks, for the host to attribute from the trace:
 *
 *   demo: late job=K release=R start=S end=E dropped=D
 *
 * `late` is how long after its release a job started, `resp` how long after
 * its release it ended; busy_us how long the four tasks ran since the
 * previous line (about a second), and cpu_pct that share of the time with
 * two decimals: alone on its core the RTOS waits in WFI most of the time,
 * so a whole percent would round it to 0; `full` the periods whose message
 * waited because the ring was full (it goes out later, never dropped);
 * print_us how long the previous second's two lines took to write; tio_max
 * and tio_mean the timed outputs' error in counter ticks (Partita's own
 * figures, PARTITA_TIO_STATS), counter_hz the counter's frequency, which
 * turns them into time; tio_err the last refusal of a timed-output call (a
 * PARTITA_* status, 0: none); accel_bad the jobs whose output differed from
 * the software's or that failed; accel_wait_max_us the longest acquire,
 * request to connection, as this guest saw it; accel_held 1 while the
 * device is connected to a PRR (STAT.CONNECTED).
 *
 * The telemetry ring, in the window (little endian, 64-bit words):
 *
 *   0x00 magic "PTDEMO01"   0x08 head: messages written
 *   0x10 tail: messages the reader consumed (the reader writes it)
 *   0x18 slots              0x40 + 8 * (n % slots): message n
 *
 * Message n: bits 0-31 its sequence number n + 1, bits 32-47 the
 * controller's output (two's complement), bits 48-63 a check,
 * (seq * 40503) >> 16 & 0xffff XOR the output, so a reader tells a torn
 * or stale slot from a real one. The writer fills the slot, then (after a
 * barrier) advances head; it never overwrites a slot the reader has not
 * passed (head - tail < slots). A reader without hypercalls (Linux from
 * user space, through /dev/mem) can follow it by polling.
 */
#include "rtos_partita.h"
#include "bench.h"
#include "accel_sw.h"
#include "accel_job.h"
#include "console.h"

#define CONTROL_PRIO	1
#define REPORT_PRIO	4
#define ACCEL_PRIO	8
#define STACK		8192

#define RING_MAGIC	0x31304f4d45445450ull	/* "PTDEMO01" */
#define RING_SLOTS	64u
#define RING_FIRST	0x40u

/* One QAM-16 frame of 256 bits: 32 bytes in, 64 symbols of 4 bytes out. */
#define ACCEL_BITS	256u
#define ACCEL_IN	(ACCEL_BITS / 8)
#define ACCEL_OUT	(ACCEL_BITS / 4 * 4)
#define ACCEL_TIMEOUT_MS	2000u

/* The timed outputs' GPIO line. */
#define TIO_PIN		1u

static rtos_task_t control, report, accel;
static uint64_t control_stack[STACK / 8] __attribute__((aligned(16)));
static uint64_t report_stack[STACK / 8] __attribute__((aligned(16)));
static uint64_t accel_stack[STACK / 8] __attribute__((aligned(16)));

static uint32_t tick_hz;
static uint64_t hz;

/* What the report task reads; each written by one task only. */
static volatile uint64_t jobs, misses, resp_max, late_max, sent, full_periods;
static volatile uint64_t accel_jobs, accel_bad, accel_wait_max;
static volatile long tio_err;
/* Counter ticks the tasks ran, for cpu_pct. */
static volatile uint64_t busy_control, busy_accel, busy_report;

static inline void barrier(void)
{
	__asm__ volatile("dmb sy" ::: "memory");
}

/*
 * The late jobs the report task has not printed yet: the control task
 * writes entry `late_head % LATE_KEPT` then advances the head; the report
 * task reads up to the head and advances the tail. A job finding the ring
 * full is counted in `late_dropped` only.
 */
#define LATE_KEPT	16u
static struct late_job {
	uint64_t job, release, start, end;
} late_jobs[LATE_KEPT];
static volatile uint32_t late_head, late_tail;
static volatile uint64_t late_dropped;

static void keep_late(uint64_t job, uint64_t release, uint64_t start, uint64_t end)
{
	uint32_t head = late_head;

	if (head - late_tail >= LATE_KEPT) {
		late_dropped++;
		return;
	}
	late_jobs[head % LATE_KEPT] = (struct late_job){ job, release, start, end };
	barrier();
	late_head = head + 1;
}

static volatile uint64_t *ring;
static uint8_t accel_in[ACCEL_IN] __attribute__((aligned(16)));
static uint8_t accel_out[ACCEL_OUT] __attribute__((aligned(16)));
static uint8_t accel_ref[ACCEL_OUT] __attribute__((aligned(16)));
static struct rtos_accel acc;

static inline uint64_t cntv_cval(void)
{
	uint64_t v;

	__asm__ volatile("mrs %0, cntv_cval_el0" : "=r"(v));
	return v;
}

static uint64_t us_to_counts(uint64_t us)
{
	return us * hz / 1000000u;
}

static uint64_t counts_to_us(uint64_t counts)
{
	return counts * 1000000u / hz;
}

/* Sequence number, output and check in one word, as the comment above says. */
static uint64_t message(uint32_t seq, int16_t output)
{
	uint32_t check = (((uint64_t)seq * 40503u) >> 16 & 0xffffu) ^ (uint16_t)output;

	return (uint64_t)seq | (uint64_t)(uint16_t)output << 32 | (uint64_t)(check & 0xffffu) << 48;
}

/* False while the reader has not freed a slot: the message waits, never dropped. */
static bool publish(int16_t output)
{
	uint64_t head = ring[1], tail = ring[2];

	if (head - tail >= RING_SLOTS)
		return false;
	ring[RING_FIRST / 8 + head % RING_SLOTS] = message((uint32_t)(head + 1), output);
	barrier();
	ring[1] = head + 1;
	sent = head + 1;
	return true;
}

/*
 * A first-order plant x' = (u - x) / tau, stepped once a period, under a
 * PI controller in Q16 fixed point; the set point steps every 2 s, so the
 * loop always has something to do.
 */
struct loop {
	int64_t x, integral;
	uint64_t k;
};

static int16_t control_step(struct loop *l, uint32_t period_ms)
{
	int64_t setpoint = ((l->k * period_ms / 2000u) & 1u) ? (1 << 16) : -(1 << 16);
	int64_t error = setpoint - l->x, u;
	int i;

	l->integral += error * (int64_t)period_ms / 100;
	if (l->integral > (8 << 16))
		l->integral = 8 << 16;
	if (l->integral < -(8 << 16))
		l->integral = -(8 << 16);
	u = 2 * error + l->integral / 4;
	/* The plant, integrated in ten sub-steps of the period. */
	for (i = 0; i < 10; i++)
		l->x += (u - l->x) * (int64_t)period_ms / 10 / 50;
	l->k++;
	return (int16_t)(u >> 6);
}

static void control_main(void *arg)
{
	const struct bench_args *a = arg;
	uint32_t period_ticks = a->demo_period_ms * tick_hz / 1000u;
	uint64_t period = us_to_counts((uint64_t)a->demo_period_ms * 1000u);
	uint64_t deadline = us_to_counts(a->demo_deadline_us);
	uint64_t first_tick, edge, k;
	struct loop l = { 0, 0, 0 };
	bool pending = false;
	int16_t output = 0;

	if (period_ticks == 0)
		period_ticks = 1;
	/* Start on a tick: the timer's next compare value, less one tick, is this tick's edge. */
	rtos_sleep(1);
	first_tick = rtos_ticks();
	edge = cntv_cval() - hz / tick_hz;
	for (k = 0;; k++) {
		uint64_t release_tick = first_tick + k * period_ticks, now = rtos_ticks();
		uint64_t release = edge + k * period, start, end;

		if (release_tick > now)
			rtos_sleep((uint32_t)(release_tick - now));
		start = rtos_counter();
		output = control_step(&l, a->demo_period_ms);
		if (k % a->demo_send_every == 0) {
			if (pending)
				full_periods++;
			pending = true;
		}
		if (pending && publish(output))
			pending = false;
		end = rtos_counter();
		busy_control += end - start;
		if (start > release && start - release > late_max)
			late_max = start - release;
		if (end > release && end - release > resp_max)
			resp_max = end - release;
		if (end > release + deadline) {
			misses++;
			keep_late(k, release, start, end);
		}
		jobs = k + 1;
	}
}

static void start_square_wave(uint32_t half_us)
{
	uint64_t half = us_to_counts(half_us), first = rtos_counter() + us_to_counts(10000);
	long s;

	s = rtos_tio_periodic(TIO_PIN, TIO_PIN, first, 2 * half);
	if (s == PARTITA_OK)
		s = rtos_tio_periodic(TIO_PIN, 0, first + half, 2 * half);
	if (s != PARTITA_OK) {
		tio_err = s;
		rtos_printf("demo: timed output refused: %s\n", rtos_partita_status_name(s));
	}
}

static void accel_main(void *arg)
{
	const struct bench_args *a = arg;
	uint32_t every = a->demo_accel_ms * tick_hz / 1000u, timeout = ACCEL_TIMEOUT_MS * tick_hz / 1000u;
	uint64_t seed = 1;

	if (rtos_accel_find(&acc, "qam16") != PARTITA_OK) {
		rtos_printf("demo: no qam16 device\n");
		return;
	}
	for (;;) {
		uint64_t start;
		long frames;
		bool same;
		uint32_t i;

		rtos_sleep(every ? every : 1);
		start = rtos_counter();
		accel_job_input(accel_in, true, seed++, ACCEL_IN);
		accel_sw_frames(ACCEL_SW_QAM16, ACCEL_BITS, accel_in, accel_ref, 0, 1);
		busy_accel += rtos_counter() - start;
		/* The task sleeps in here while the fabric works: not busy time. */
		frames = rtos_accel_run(&acc, accel_in, ACCEL_IN, accel_out, ACCEL_OUT, ACCEL_BITS, timeout);
		start = rtos_counter();
		same = frames == 1;
		for (i = 0; same && i < ACCEL_OUT; i++)
			same = accel_out[i] == accel_ref[i];
		if (!same)
			accel_bad++;
		if (acc.waited > accel_wait_max)
			accel_wait_max = acc.waited;
		accel_jobs++;
		busy_accel += rtos_counter() - start;
	}
}

/*
 * The counter lines are built here and written a character at a time with
 * interrupts enabled. rtos_printf masks them for a whole line so that
 * lines never interleave, and each character costs two traps to Partita's
 * console (the PL011's flag register, then its data register): a line of
 * 130 characters kept the tick masked for milliseconds under QEMU and made
 * the control task late. Only this task prints while the demo runs.
 */
struct line {
	char text[200];
	uint32_t n;
};

static void put_str(struct line *l, const char *s)
{
	while (*s && l->n < sizeof(l->text) - 1)
		l->text[l->n++] = *s++;
}

static void put_u64(struct line *l, uint64_t v)
{
	char digits[20];
	int i = 0;

	do {
		digits[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (i && l->n < sizeof(l->text) - 1)
		l->text[l->n++] = digits[--i];
}

/* " key=value" */
static void put_kv(struct line *l, const char *key, uint64_t v)
{
	put_str(l, " ");
	put_str(l, key);
	put_str(l, "=");
	put_u64(l, v);
}

/* " key=I.FF": `hundredths` as a decimal with two places. */
static void put_kv_hundredths(struct line *l, const char *key, uint64_t hundredths)
{
	put_kv(l, key, hundredths / 100u);
	put_str(l, hundredths % 100u < 10u ? ".0" : ".");
	put_u64(l, hundredths % 100u);
}

static void put_kv_signed(struct line *l, const char *key, int64_t v)
{
	put_str(l, " ");
	put_str(l, key);
	put_str(l, v < 0 ? "=-" : "=");
	put_u64(l, v < 0 ? (uint64_t)-v : (uint64_t)v);
}

static void emit(struct line *l)
{
	uint32_t i;

	l->text[l->n++] = '\n';
	for (i = 0; i < l->n; i++)
		putc_raw(l->text[i]);
	l->n = 0;
}

static void report_main(void *arg)
{
	uint64_t began = rtos_counter(), last = began, busy_last = 0, print_last = 0;
	uint32_t second = 0;
	struct line l = { .n = 0 };

	(void)arg;
	for (;;) {
		struct rtos_tio_stats st = { 0, 0, 0 };
		uint64_t now, busy, start;
		long s;

		rtos_sleep(tick_hz);
		start = rtos_counter();
		s = rtos_tio_stats(&st);
		if (s != PARTITA_OK)
			tio_err = s;
		now = rtos_counter();
		busy = busy_control + busy_accel + busy_report;
		second++;
		/* Two lines: Partita's console cuts a line at 200 characters. */
		put_str(&l, "demo:");
		put_kv(&l, "t", second);
		put_kv(&l, "jobs", jobs);
		put_kv(&l, "misses", misses);
		put_kv(&l, "resp_max_us", counts_to_us(resp_max));
		put_kv(&l, "late_max_us", counts_to_us(late_max));
		put_kv_hundredths(&l, "cpu_pct", (busy - busy_last) * 10000u / (now - last ? now - last : 1));
		put_kv(&l, "busy_us", counts_to_us(busy - busy_last));
		put_kv(&l, "sent", sent);
		put_kv(&l, "full", full_periods);
		put_kv(&l, "print_us", counts_to_us(print_last));
		emit(&l);
		put_str(&l, "demo:");
		put_kv(&l, "t", second);
		put_kv(&l, "tio_done", st.done);
		put_kv(&l, "tio_max", st.max_error);
		put_kv(&l, "tio_mean", st.done ? st.sum_error / st.done : 0);
		put_kv_signed(&l, "tio_err", tio_err);
		put_kv(&l, "accel_jobs", accel_jobs);
		put_kv(&l, "accel_bad", accel_bad);
		put_kv(&l, "accel_wait_max_us", counts_to_us(accel_wait_max));
		put_str(&l, " accel=qam16");
		put_kv(&l, "accel_held",
		       acc.page ? *(volatile uint32_t *)(uintptr_t)(acc.page + PARTITA_ACC_STAT) & 1u : 0);
		put_kv(&l, "counter_hz", hz);
		emit(&l);
		while (late_tail != late_head) {
			const struct late_job *j = &late_jobs[late_tail % LATE_KEPT];

			put_str(&l, "demo: late");
			put_kv(&l, "job", j->job);
			put_kv(&l, "release", j->release);
			put_kv(&l, "start", j->start);
			put_kv(&l, "end", j->end);
			put_kv(&l, "dropped", late_dropped);
			barrier();
			late_tail++;
			emit(&l);
		}
		print_last = rtos_counter() - now;
		busy_last = busy;
		last = now;
		busy_report += rtos_counter() - start;
	}
}

void demo_run(const struct bench_args *a)
{
	struct rtos_channel ch;
	long s;

	tick_hz = a->tick_hz ? a->tick_hz : RTOS_TICK_HZ_DEFAULT;
	hz = rtos_counter_hz();
	s = rtos_channel_find("telemetry", &ch);
	if (s != PARTITA_OK || ch.kind != PARTITA_CHANNEL_SHARED_MEMORY || !ch.writable ||
	    ch.window_size < RING_FIRST + RING_SLOTS * 8) {
		rtos_printf("demo: no writable shared-memory channel `telemetry`: %s\n",
			    rtos_partita_status_name(s));
		rtos_power_off();
	}
	ring = (volatile uint64_t *)(uintptr_t)ch.window;
	/* A restarted RTOS goes on from the ring's state: the reader's numbering holds. */
	if (ring[0] != RING_MAGIC) {
		ring[1] = 0;
		ring[2] = 0;
		ring[3] = RING_SLOTS;
		barrier();
		ring[0] = RING_MAGIC;
	}
	sent = ring[1];
	accel_sw_init();
	rtos_printf("demo: control every %u ms, deadline %u us, telemetry at 0x%lx (%u slots), square wave %u us on GPIO %u, qam16 every %u ms\n",
		    a->demo_period_ms, a->demo_deadline_us, ch.window, RING_SLOTS, a->demo_tio_us,
		    __builtin_ctz(TIO_PIN), a->demo_accel_ms);
	start_square_wave(a->demo_tio_us);
	s = rtos_task_create(&control, "control", control_main, (void *)a, CONTROL_PRIO, control_stack,
			     sizeof(control_stack));
	if (s == RTOS_OK)
		s = rtos_task_create(&report, "report", report_main, NULL, REPORT_PRIO, report_stack,
				     sizeof(report_stack));
	if (s == RTOS_OK)
		s = rtos_task_create(&accel, "accel", accel_main, (void *)a, ACCEL_PRIO, accel_stack,
				     sizeof(accel_stack));
	if (s != RTOS_OK)
		rtos_printf("demo: cannot create the tasks: %ld\n", s);
	/* The tasks above run for ever; the caller's task is done. */
	for (;;)
		rtos_sleep(UINT32_MAX);
}
