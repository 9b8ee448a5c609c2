/*
 * accel=qam16|qam64|fft512|fft1024: the guest-aware programming model of
 * a virtual accelerator, through rtos_partita.h. This task (the
 * controller, the most urgent) runs accel_jobs jobs of accel_frames frames
 * each with rtos_accel_run; a second task of lower priority does nothing
 * but count, so every count it makes while a job is under way is time the
 * RTOS gave it while the first task waited, for READY or for OVER.
 *
 * Each job's input comes from xorshift64* seeded accel_seed + j, as the
 * test guest makes it (guests/test-guest/src/accel.c), and its output is
 * hashed (FNV-1a, 64-bit), so the host checks it against its own
 * computation. With accel_wait=CH the task first receives one message on
 * channel CH, so that a test can make it ask only once another partition
 * computes on the fabric. Output, then power off:
 *
 *   accel: qam16 device D at 0xPAGE, signals WAIT READY PREEMPT
 *   accel: job J frames F result R hash H waited W ticks preempts P waits X other A B
 *   accel: other task ran N times while waiting, M while waiting for READY
 *   accel: done
 *
 * W is the acquire's time in counter ticks (CNTFRQ a second), P and X the
 * IPC_PREEMPT and IPC_WAIT signals of the job, A and B the other task's
 * counts while this one waited for READY and while its job computed.
 */
#include "rtos_partita.h"
#include "bench.h"
#include "dt.h"
#include "accel_job.h"
#include "accel_sw.h"

#define OTHER_PRIO	16
#define OTHER_STACK	4096
/* Long enough for any peer to tell; short enough to fail instead of hang. */
#define PEER_WAIT_MS	10000u
/* A job not over after this long (plus so much per frame) has failed. */
#define JOB_TIMEOUT_MS	5000u
#define JOB_TIMEOUT_FRAME_MS	20u
#define PAGE		0x1000ull

static struct rtos_accel acc;
static struct dt_info dt;
static rtos_task_t other;
static uint64_t other_stack[OTHER_STACK / 8] __attribute__((aligned(16)));
static volatile uint64_t other_loops;
/*
 * The buffers sit in the upper half of the first RAM region, below the
 * device tree Partita puts at its end (the library reads it again): in
 * .bss they would make every boot zero them.
 */
static uint8_t *in_buf, *out_buf;
static uint64_t in_max, out_max;

extern char _end[];

/* Counts, for ever: it runs only when every more urgent task waits. */
static void other_main(void *arg)
{
	(void)arg;
	for (;;)
		other_loops++;
}

/*
 * In the upper half of the first RAM region, clear of the image and the
 * tree; the input gets one `in_share`-th of it.
 */
static bool place_buffers(uint64_t in_share)
{
	const char *why = "";
	uint64_t lo, hi, dtb = rtos_boot_dtb(), end = (uint64_t)(uintptr_t)_end;

	if (!dt_read(dtb, &dt, &why) || dt.nmem == 0)
		return false;
	lo = dt.mem[0].base + dt.mem[0].size / 2;
	hi = dt.mem[0].base + dt.mem[0].size;
	if (lo < end)
		lo = (end + PAGE - 1) & ~(PAGE - 1);
	if (dtb >= lo && dtb < hi)
		hi = dtb & ~(PAGE - 1);
	if (hi <= lo)
		return false;
	in_max = (hi - lo) / in_share & ~15ull;
	out_max = (hi - lo - in_max) & ~15ull;
	in_buf = (uint8_t *)(uintptr_t)lo;
	out_buf = in_buf + in_max;
	return true;
}

static uint32_t ms_to_ticks(uint32_t ms, uint32_t hz)
{
	return (uint32_t)(((uint64_t)ms * hz + 999) / 1000);
}

__attribute__((noreturn)) static void finish(void)
{
	rtos_printf("accel: done\n");
	rtos_power_off();
}

static void wait_for_turn(const struct bench_args *a, uint32_t hz)
{
	uint64_t msg;
	uint32_t len;
	long s;

	if (a->accel_wait == ACCEL_NO_CHANNEL)
		return;
	s = rtos_port_receive(a->accel_wait, &msg, sizeof(msg), &len, ms_to_ticks(PEER_WAIT_MS, hz));
	if (s != PARTITA_OK)
		rtos_printf("accel: waiting on channel %u: %s\n", a->accel_wait, rtos_partita_status_name(s));
}

void accel_run(const struct bench_args *a)
{
	const char *name = accel_mode_name(a->accel);
	uint32_t hz = a->tick_hz ? a->tick_hz : RTOS_TICK_HZ_DEFAULT, in_frame, out_frame, j;
	uint32_t timeout = ms_to_ticks(JOB_TIMEOUT_MS + a->accel_frames * JOB_TIMEOUT_FRAME_MS, hz);
	uint64_t in_bytes, out_bytes, total = 0, total_ready = 0;
	bool qam = a->accel == ACCEL_QAM16 || a->accel == ACCEL_QAM64;
	long s;

	s = rtos_accel_find(&acc, name);
	if (s != PARTITA_OK) {
		rtos_printf("accel: no %s device: %s\n", name, rtos_partita_status_name(s));
		finish();
	}
	rtos_printf("accel: %s device %u at 0x%lx, signals %u %u %u\n", name, acc.device, acc.page,
		    acc.intid_wait, acc.intid_ready, acc.intid_preempt);
	/* A ninth for input: QAM-16 makes 8 bytes of each. */
	if (rtos_accel_frame_bytes(acc.function, 0, &in_frame, &out_frame) != PARTITA_OK ||
	    !place_buffers(9)) {
		rtos_printf("accel: no room for the buffers\n");
		finish();
	}
	in_bytes = (uint64_t)a->accel_frames * in_frame;
	out_bytes = (uint64_t)a->accel_frames * out_frame;
	if (in_bytes > in_max || out_bytes > out_max) {
		rtos_printf("accel: %u frames do not fit in 0x%lx + 0x%lx bytes\n", a->accel_frames, in_max,
			    out_max);
		finish();
	}
	s = rtos_task_create(&other, "other", other_main, NULL, OTHER_PRIO, other_stack,
			     sizeof(other_stack));
	if (s != RTOS_OK)
		rtos_printf("accel: no other task: %ld\n", s);
	wait_for_turn(a, hz);
	for (j = 0; j < a->accel_jobs; j++) {
		uint32_t preempts = acc.preempts, waits = acc.waits;
		uint64_t before, ready, after, waited;
		long frames;

		accel_job_input(in_buf, qam, (uint64_t)a->accel_seed + j, (uint32_t)in_bytes);
		/* Acquiring first only splits the counts: run acquires again, at once. */
		before = other_loops;
		s = rtos_accel_acquire(&acc, timeout);
		ready = other_loops;
		waited = acc.waited;
		frames = s != PARTITA_OK ? s : rtos_accel_run(&acc, in_buf, (uint32_t)in_bytes, out_buf,
							       (uint32_t)out_bytes, 0, timeout);
		after = other_loops;
		total += after - before;
		total_ready += ready - before;
		if (frames < 0) {
			rtos_printf("accel: job %u failed: %s, stat 0x%x\n", j, rtos_partita_status_name(frames),
				    *(volatile uint32_t *)(uintptr_t)(acc.page + PARTITA_ACC_STAT));
			continue;
		}
		rtos_printf("accel: job %u frames %u result %ld hash %016lx waited %lu ticks preempts %u waits %u other %lu %lu\n",
			    j, a->accel_frames, frames, accel_job_hash(out_buf, out_bytes), waited,
			    acc.preempts - preempts, acc.waits - waits, ready - before, after - ready);
	}
	rtos_printf("accel: other task ran %lu times while waiting, %lu while waiting for READY\n", total,
		    total_ready);
	finish();
}

/*
 * accel_table6=all (or functions joined by commas): Ker-ONE's Table 6,
 * software against accelerator. For each function, accel_frames frames of
 * Ker-ONE's length from xorshift64* seeded accel_seed are computed by
 * accel_sw on this CPU, and then through the function's virtual device
 * with rtos_accel_run (connected first, so no download or wait is timed),
 * each timed with the counter (CNTFRQ ticks a second); the two outputs
 * must hash the same. Every function's software runs before any device is
 * connected: a connected device's fabric pCPU polls START, and under
 * -icount, where all vCPUs share one instruction clock, its polling would
 * count as this CPU's time. Output, then power off:
 *
 *   accel-table6: fn qam16 frames N sw TICKS hw TICKS hz HZ sw-hash H hw-hash H result R
 *   accel-table6: done
 *
 * A function that cannot run says why in a line of its own and has no
 * result line.
 */
struct table6 {
	struct rtos_accel dev;
	bool ok;		/* the software's figures are in */
	uint64_t in_bytes, out_bytes, sw_ticks, sw_hash;
};

static struct table6 table6[ACCEL_FFT1024 + 1];

/* A mode goes to accel_sw as it is. */
_Static_assert(ACCEL_QAM16 == ACCEL_SW_QAM16 && ACCEL_QAM64 == ACCEL_SW_QAM64 &&
		       ACCEL_FFT512 == ACCEL_SW_FFT512 && ACCEL_FFT1024 == ACCEL_SW_FFT1024,
	       "accel_sw numbers functions as accel= does");

static bool is_qam(enum accel_mode mode)
{
	return mode == ACCEL_QAM16 || mode == ACCEL_QAM64;
}

static void table6_software(const struct bench_args *a, enum accel_mode mode)
{
	struct table6 *t = &table6[mode];
	const char *name = accel_mode_name(mode);
	uint64_t in_frame, out_frame, t0, t1;
	int sw;

	accel_sw_frame_bytes((unsigned)mode, 0, &in_frame, &out_frame);
	t->in_bytes = (uint64_t)a->accel_frames * in_frame;
	t->out_bytes = (uint64_t)a->accel_frames * out_frame;
	if (t->in_bytes > in_max || t->out_bytes > out_max) {
		rtos_printf("accel-table6: %u frames of %s do not fit in 0x%lx + 0x%lx bytes\n",
			    a->accel_frames, name, in_max, out_max);
		return;
	}
	accel_job_input(in_buf, is_qam(mode), a->accel_seed, (uint32_t)t->in_bytes);
	t0 = rtos_counter();
	sw = accel_sw_frames((unsigned)mode, 0, in_buf, out_buf, 0, a->accel_frames);
	t1 = rtos_counter();
	if (sw != ACCEL_SW_OK) {
		rtos_printf("accel-table6: %s in software failed: %d\n", name, sw);
		return;
	}
	t->sw_ticks = t1 - t0;
	t->sw_hash = accel_job_hash(out_buf, t->out_bytes);
	t->ok = true;
}

static void table6_device(const struct bench_args *a, enum accel_mode mode, uint32_t timeout)
{
	struct table6 *t = &table6[mode];
	const char *name = accel_mode_name(mode);
	uint64_t t0, t1;
	long s, frames;

	s = rtos_accel_find(&t->dev, name);
	if (s != PARTITA_OK) {
		rtos_printf("accel-table6: no %s device: %s\n", name, rtos_partita_status_name(s));
		return;
	}
	accel_job_input(in_buf, is_qam(mode), a->accel_seed, (uint32_t)t->in_bytes);
	s = rtos_accel_acquire(&t->dev, timeout);
	t0 = rtos_counter();
	frames = s != PARTITA_OK ? s : rtos_accel_run(&t->dev, in_buf, (uint32_t)t->in_bytes, out_buf,
						      (uint32_t)t->out_bytes, 0, timeout);
	t1 = rtos_counter();
	if (frames < 0) {
		rtos_printf("accel-table6: %s on its device failed: %s\n", name, rtos_partita_status_name(frames));
		return;
	}
	rtos_printf("accel-table6: fn %s frames %u sw %lu hw %lu hz %lu sw-hash %016lx hw-hash %016lx result %ld\n",
		    name, a->accel_frames, t->sw_ticks, t1 - t0, rtos_counter_hz(), t->sw_hash,
		    accel_job_hash(out_buf, t->out_bytes), frames);
}

void accel_table6_run(const struct bench_args *a)
{
	uint32_t hz = a->tick_hz ? a->tick_hz : RTOS_TICK_HZ_DEFAULT;
	uint32_t timeout = ms_to_ticks(JOB_TIMEOUT_MS + a->accel_frames * JOB_TIMEOUT_FRAME_MS, hz);
	uint32_t m;

	/* Half for input: an FFT's output is about as large. */
	if (!place_buffers(2)) {
		rtos_printf("accel-table6: no room for the buffers\n");
	} else {
		/* Outside the timing: the FFTs' table is built once per boot. */
		accel_sw_init();
		for (m = ACCEL_QAM16; m <= ACCEL_FFT1024; m++)
			if (a->table6 & (1u << m))
				table6_software(a, m);
		for (m = ACCEL_QAM16; m <= ACCEL_FFT1024; m++)
			if (table6[m].ok)
				table6_device(a, m, timeout);
	}
	rtos_printf("accel-table6: done\n");
	rtos_power_off();
}
