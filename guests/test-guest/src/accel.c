/*
 * acc=ADDR: the native programming model of a virtual device. The guest
 * simply writes the interface page's registers; its first write while the
 * device is not connected stalls until Partita has found it a PRR, then
 * goes through. Each job's output is hashed (FNV-1a, 64-bit) so the host
 * can check it against its own computation of the same input, which both
 * make with the same xorshift64* generator from the job's seed.
 *
 *   acc-fn=qam16|qam64|fft512|fft1024   what the device computes
 *   acc-frames=N   frames per job (1)    acc-jobs=J   jobs (1)
 *   acc-cmd=C      frame length, CMD (0: Ker-ONE's)
 *   acc-seed=S     job j's input comes from seed S + j (1)
 *   acc-bad=1      the input lies outside the partition: ERR_DMA expected
 *   acc-gap-us=N   pause N us after each job (0)
 *   acc-for-ms=N   run jobs until N ms have passed since the first
 *                  began, in place of acc-jobs (0: acc-jobs)
 *   acc2=ADDR acc2-fn=F   a second device, as many jobs as the first;
 *                  the two take turns, the first first
 *
 * Tests that need partitions to ask in a given order chain them through
 * channels rather than delays:
 *   acc-wait=CH    receive one message on channel CH before asking
 *   acc-delay-ms=N then wait N ms more
 *   acc-tell=CH    send one message on CH at the moment acc-tell-at says:
 *   acc-tell-at=ready|ask|busy|done   before waiting for its turn,
 *                  before the first request, once the first
 *                  job computes (the default), or once every job is over
 *
 * acc-fallback=1 makes the guest a GPOS that would rather compute on its
 * CPU than wait: it asks for acc's device (index acc-index) guest-aware,
 * and when a job is preempted, or its request waits longer than
 * acc-fallback-ms, it gives the device up (PARTITA_ACC_RELEASE) and
 * computes the frames the accelerator did not finish in software.
 */
#include "guest.h"
#include "console.h"
#include "partita.h"
#include "accel_job.h"
#include "accel_sw.h"

/* Ker-ONE's frame: 18,800 bits into the mappers, 4,700 samples into the FFTs. */
#define FRAME_BITS 18800
#define FRAME_SAMPLES 4700
/* A job not over after this long (plus so much per frame) has failed. */
#define ACC_TIMEOUT_MS 5000
#define ACC_TIMEOUT_FRAME_MS 20

/*
 * The buffers sit in the upper half of the first RAM region, past the
 * image and its stack: in .bss they would make every boot of the test
 * guest zero them, and so change the timing of tests that never use them.
 */
static u8 *acc_in, *acc_out;
static u64 acc_in_max, acc_out_max;
/* The first job's input was made before the guest waited for its turn. */
static bool first_input_made;

/* Bits per symbol of a mapper; 0 for an FFT. */
static u32 qam_bits(enum acc_fn fn)
{
	return fn == ACC_QAM16 ? 4 : fn == ACC_QAM64 ? 6 : 0;
}

static u32 fft_points(enum acc_fn fn)
{
	return fn == ACC_FFT512 ? 512 : 1024;
}

/* Bytes of one frame's input and output. */
static void frame_bytes(enum acc_fn fn, u32 cmd, u32 *in, u32 *out)
{
	if (qam_bits(fn)) {
		u32 bits = cmd ? cmd : FRAME_BITS;

		*in = (bits + 7) / 8;
		*out = bits / qam_bits(fn) * 4;
	} else {
		u32 samples = cmd ? cmd : FRAME_SAMPLES, n = fft_points(fn);

		*in = samples * 4;
		*out = (samples + n - 1) / n * n * 4;
	}
}

static void w32(u64 page, u32 off, u32 v)
{
	*(volatile u32 *)(page + off) = v;
}

static u32 r32(u64 page, u32 off)
{
	return *(volatile u32 *)(page + off);
}

static void tell(const struct bootargs *a, enum acc_moment now)
{
	u64 msg = now;
	long s;

	if (a->acc_tell == ACC_NO_CHANNEL || a->acc_tell_at != now)
		return;
	s = partita_call4(PARTITA_PORT_SEND, a->acc_tell, (u64)&msg, sizeof(msg), PARTITA_POLL).status;
	if (s != PARTITA_OK)
		printf("accel: telling channel %lu failed: %ld\n", a->acc_tell, s);
}

static void wait_for_turn(const struct bootargs *a)
{
	u64 msg;
	long s;

	tell(a, ACC_AT_READY);
	if (a->acc_wait != ACC_NO_CHANNEL) {
		s = partita_call4(PARTITA_PORT_RECEIVE, a->acc_wait, (u64)&msg, sizeof(msg), PARTITA_FOREVER).status;
		if (s != PARTITA_OK)
			printf("accel: waiting on channel %lu failed: %ld\n", a->acc_wait, s);
	}
	if (a->acc_delay_ms)
		delay_ms(a->acc_delay_ms);
}

static void release_device(const struct bootargs *a)
{
	long s = partita_call(PARTITA_ACC_RELEASE, a->acc_index, 0, 0).status;

	if (s != PARTITA_OK)
		printf("accel: release of device %lu failed: %ld\n", a->acc_index, s);
}

/*
 * Fallback mode asks without stalling: false if the device was not
 * connected within acc-fallback-ms, and was given up. Without a limit
 * the first write waits for the connection, as natively.
 */
static bool ask_or_give_up(const struct bootargs *a, u64 page)
{
	struct partita_result r = partita_call(PARTITA_ACC_REQUEST, a->acc_index, 0, 0);
	u64 limit = counter_now() + ms_to_counts(a->acc_fallback_ms);

	if (r.status != PARTITA_OK)
		printf("accel: request of device %lu failed: %ld\n", a->acc_index, r.status);
	if (r.status != PARTITA_OK || r.value || !a->acc_fallback_ms)
		return true;
	while (!(r32(page, PARTITA_ACC_STAT) & PARTITA_ACC_STAT_CONNECTED)) {
		if (counter_now() > limit) {
			release_device(a);
			return false;
		}
		__asm__ volatile("yield");
	}
	return true;
}

/*
 * Preempted: gives the device up and returns the frames the accelerator
 * finished. Once the call returns it writes nothing more, so they are
 * final; RESULT counts this job, which must have started to be preempted.
 */
static u64 give_up(const struct bootargs *a, u64 page, u64 frames)
{
	u64 done;

	release_device(a);
	done = *(volatile u64 *)(page + PARTITA_ACC_RESULT);
	return done < frames ? done : frames;
}

/* Frames `done` to the end of job `j` on the CPU; false if it cannot. */
static bool finish_on_cpu(const struct bootargs *a, enum acc_fn fn, u64 j, u64 done, u64 frames)
{
	int e;

	printf("accel: job %lu moved to cpu at frame %lu of %lu\n", j, done, frames);
	/* enum acc_fn lists the functions in accel_sw's order, from 0. */
	e = accel_sw_frames(ACCEL_SW_QAM16 + fn, a->acc_cmd, acc_in, acc_out, done, frames - done);
	if (e != ACCEL_SW_OK)
		printf("accel: job %lu cannot be computed on the cpu: %d\n", j, e);
	return e == ACCEL_SW_OK;
}

/* Job `j`'s input, from its seed (nothing if it is too large). */
static void make_input(const struct bootargs *a, enum acc_fn fn, u64 j)
{
	u32 in, out;

	frame_bytes(fn, a->acc_cmd, &in, &out);
	if (a->acc_frames * in <= acc_in_max)
		accel_job_input(acc_in, qam_bits(fn) != 0, a->acc_seed + j, a->acc_frames * in);
}

/* Job `j` on the device at `page`, computing `fn`. */
static void one_job(const struct bootargs *a, u64 page, enum acc_fn fn, u64 j)
{
	u32 in, out, stat;
	u64 frames = a->acc_frames, t0, t1, t2, limit, input, result;
	bool first = j == 0, fallback = a->acc_fallback && page == a->acc;
	/* Frames the accelerator finished, once the job moved to the CPU. */
	u64 moved_at = ~0ull;

	frame_bytes(fn, a->acc_cmd, &in, &out);
	if (frames * in > acc_in_max || frames * out > acc_out_max) {
		printf("accel: job %lu too large\n", j);
		return;
	}
	if (!(first && first_input_made))
		make_input(a, fn, j);
	if (first)
		tell(a, ACC_AT_ASK);
	input = a->acc_bad ? 0x1000 : (u64)acc_in;
	t0 = counter_now();
	if (fallback && !ask_or_give_up(a, page)) {
		t1 = counter_now();
		moved_at = 0;
		goto on_cpu;
	}
	/* The first write asks for a PRR: it returns once one is connected. */
	w32(page, PARTITA_ACC_DATA_ADDR, (u32)input);
	t1 = counter_now();
	w32(page, PARTITA_ACC_DATA_ADDR + 4, (u32)(input >> 32));
	w32(page, PARTITA_ACC_DATA_SIZE, frames * in);
	w32(page, PARTITA_ACC_OUT_ADDR_LO, (u32)(u64)acc_out);
	w32(page, PARTITA_ACC_OUT_ADDR_HI, (u32)((u64)acc_out >> 32));
	w32(page, PARTITA_ACC_OUT_SIZE, frames * out);
	w32(page, PARTITA_ACC_CMD, a->acc_cmd);
	w32(page, PARTITA_ACC_INT_CTRL, 0);
	*(volatile u8 *)(page + PARTITA_ACC_OVER) = 0;
	*(volatile u8 *)(page + PARTITA_ACC_START) = 1;
	limit = t1 + ms_to_counts(ACC_TIMEOUT_MS + frames * ACC_TIMEOUT_FRAME_MS);
	for (;;) {
		stat = r32(page, PARTITA_ACC_STAT);
		if (first && (stat & PARTITA_ACC_STAT_BUSY)) {
			tell(a, ACC_AT_BUSY);
			first = false;
		}
		if (stat & (PARTITA_ACC_STAT_ERR_DMA | PARTITA_ACC_STAT_ERR_CMD))
			break;
		if (*(volatile u8 *)(page + PARTITA_ACC_OVER))
			break;
		/* Set before IPC_PREEMPT is raised: polling it is as prompt. */
		if (fallback && (stat & PARTITA_ACC_STAT_PREEMPTED)) {
			moved_at = give_up(a, page, frames);
			break;
		}
		if (counter_now() > limit) {
			printf("accel: job %lu timed out, stat 0x%x\n", j, stat);
			return;
		}
		__asm__ volatile("yield");
	}
on_cpu:
	result = *(volatile u64 *)(page + PARTITA_ACC_RESULT);
	if (moved_at != ~0ull) {
		stat = r32(page, PARTITA_ACC_STAT);
		result = finish_on_cpu(a, fn, j, moved_at, frames) ? frames : moved_at;
	}
	t2 = counter_now();
	if (first)
		tell(a, ACC_AT_BUSY);	/* over before it was seen computing */
	/* `at`: when it asked, on the counter Partita's trace also reads. */
	printf("accel: job %lu frames %lu result %lu hash %016lx stat 0x%x alloc %lu ticks done %lu ticks fn %s at %lu\n",
	       j, frames, result, accel_job_hash(acc_out, frames * out), stat, t1 - t0, t2 - t1, acc_fn_name(fn), t0);
}

/* Busy: a pause shorter than the guest's tick. */
static void pause_us(u64 us)
{
	u64 until = counter_now() + us * counter_freq() / 1000000;

	while (counter_now() < until)
		__asm__ volatile("yield");
}

/* Whether job `j` runs: acc-jobs of them, or as many as acc-for-ms allows. */
static bool another_job(const struct bootargs *a, u64 j, u64 began)
{
	u64 per_device = a->acc2 ? 2 : 1;

	if (a->acc_for_ms)
		return j % per_device || counter_now() - began < ms_to_counts(a->acc_for_ms);
	return j < per_device * a->acc_jobs;
}

void accel_test(const struct dt_info *dt, const struct bootargs *a)
{
	u64 j, began, half = dt->mem[0].size / 2;

	if (dt->nmem == 0) {
		printf("accel: no room for the buffers\n");
		return;
	}
	/* A ninth of the room for input: QAM-16 makes 8 bytes of each. */
	acc_in_max = half / 9;
	acc_out_max = half - acc_in_max;
	acc_in = (u8 *)(dt->mem[0].base + half);
	acc_out = acc_in + acc_in_max;

	/*
	 * Made before the wait, so that a partition told its turn asks at
	 * once, however long a large input takes on a busy host.
	 */
	make_input(a, a->acc_fn, 0);
	first_input_made = true;
	wait_for_turn(a);
	began = counter_now();
	/* With two devices, they take turns: job 2k on the first, 2k+1 on the second. */
	for (j = 0; another_job(a, j, began); j++) {
		bool second = a->acc2 && j % 2;

		one_job(a, second ? a->acc2 : a->acc, second ? a->acc2_fn : a->acc_fn, j);
		if (a->acc_gap_us)
			pause_us(a->acc_gap_us);
	}
	tell(a, ACC_AT_DONE);
	printf("accel: done\n");
}
